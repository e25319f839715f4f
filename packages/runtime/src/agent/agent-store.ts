import type { ValueClaim } from '../kernel/claim-check.js';
import type { RunError } from '../kernel/engine.js';
import type { Message } from '../mailbox/message.js';
import type { StepTarget } from '../interpreter/step-types.js';
import type { ReminderChange, ReminderInfo } from './reminders.js';

/**
 * Agents a send or publish writes to at once: one transition each, those of a partition in one
 * script (AgentStore.send; a step's turn starts, CommitFields.starts). Bounds that script: 256
 * agents took up to 27 ms on a loaded 2-core machine, and no script may block Redis for 50 ms (a
 * publish to 10,000 keys).
 */
export const AGENT_SEND_WINDOW = 128;

/**
 * The storage contract of keyed agents (README "Agents"): each key's state, its turn in flight,
 * its committed turns and dead letters. A key's inbox is the mailbox at its address (the run
 * store's), so a message a step sends to an agent lands in its inbox in the step's own commit.
 *
 * Each operation is one atomic transition (a Lua script on Redis, in the same partition as the
 * key's inbox; a synchronous change of maps in memory). The rules (what a turn's end means,
 * when the next turn starts) are written once, in agent-runtime.ts.
 *
 * Large states (the claim check, claim-check.ts): a stored state holds references
 * (`{"$qfValue":"<sha256>"}`) for its members over `largeValueBytes`, their texts stored apart
 * with the runs' values (RunStore.values reads them). The transition that stores a state claims
 * the values it references for the key (a {@link ValueClaim}) in place of those its previous state
 * claimed; the key's claims go when the key goes (deleteAgent, its idle time), as a run's go with
 * its record.
 */
export interface AgentStore {
  /**
   * Starts a turn of agent `ref` when it has none running and its inbox holds a message: its state
   * is made from `first` when it has none (its first activation), its turn counter goes up, and
   * the turn's run id ({@link AgentActivation.runId}) is recorded as running, with the message at
   * the head of the inbox (the turn's message). Otherwise writes nothing and resolves `undefined`.
   * With `run`, the store may make the turn's run in the same transition (see
   * {@link TurnRunTemplate}; then {@link AgentActivation.made}).
   */
  activateAgent(
    ref: string,
    first: FirstState,
    now: number,
    run?: TurnRunTemplate,
  ): Promise<AgentActivation | undefined>;
  /**
   * Appends `message` to the inbox of each agent of `agents` from outside any run (`engine.send`,
   * `engine.publish`), then starts its turn as {@link AgentStore.activateAgent} does, in one
   * transition per agent; the agents of one partition go in one round trip (the caller windows a
   * send to many). Without `first` (a process that lacks the agent's type) no turn starts: the
   * inbox is left due for a process that has the type.
   * @returns for each agent, in order: the wake ids of runs parked on its inbox (as RunStore.send:
   *   the caller promotes them), and the turn that started, if one did.
   */
  send(
    agents: readonly { ref: string; first: FirstState | undefined; run?: TurnRunTemplate | undefined }[],
    message: Message,
    now: number,
  ): Promise<{ wakes: string[]; activation?: AgentActivation }[]>;
  /**
   * Ends the turn `end.runId` of agent `ref`, only if it is the one running: a completed turn
   * commits the state and takes its message off the inbox (and records the turn); a failed or
   * cancelled turn leaves the state as it was and moves its message to the dead letters. In the
   * same transition, a message left in the inbox starts the next turn (`next`).
   * `'stale'`: that turn is not the one running (ended before, or the key was deleted).
   */
  endTurn(ref: string, end: TurnEnd): Promise<{ result: 'ended' | 'stale'; next?: AgentActivation }>;
  /** The key's record and inbox depth; `undefined` for a key never activated (or deleted). */
  loadAgent(ref: string): Promise<StoredAgent | undefined>;
  /** Addresses of the keys, by address order, `limit` at most after `cursor`; of `type` only when given. */
  listAgents(options: { type?: string; limit: number; cursor?: string }): Promise<{ refs: string[]; cursor?: string }>;
  /**
   * Deletes the key: its state, inbox, dead letters and turn history. Resolves the run id of the
   * turn that was running, if any (the caller cancels it), or `false` for no such key.
   */
  deleteAgent(ref: string): Promise<{ running?: string } | false>;
  /**
   * Makes key `ref` with state `first`, idle (no turn taken), unless it exists: a fork's copy of
   * an agent (`forkConversation`). Claims `first.values` for the key when it makes it. Resolves
   * whether it made it.
   */
  seedAgent(ref: string, first: FirstState): Promise<boolean>;
  /** Moves dead letter `messageId` back to the end of the inbox; `false` when there is none. */
  redeliver(ref: string, messageId: string): Promise<boolean>;
  /**
   * Keys whose turn has run (or been due) since before `before` (epoch ms), for the recovery of
   * a turn whose process died between two transitions; each one claimed is not due again for a
   * while (another caller leaves it alone).
   */
  turnsDue(before: number, now: number): Promise<{ ref: string; runId: string }[]>;
  /**
   * Agent addresses that got a message in a transition whose caller may have died before it
   * activated the key (a step's commit), since before `before`; each one is claimed as turnsDue does.
   */
  inboxesDue(before: number, now: number): Promise<string[]>;
  /**
   * Applies a turn's reminder changes to agent `ref`, in order: a set replaces the reminder of its
   * name, a cancel drops it. A key with reminders pending is not idle (idleTtlMs waits for them).
   */
  changeReminders(ref: string, changes: ReminderChange[]): Promise<void>;
  /**
   * Fires the reminders due at `now` (epoch ms, the store's clock), `limit` at most, earliest
   * first (within a partition, on Redis): each delivers its message to its agent's inbox (marked due, as a send does), then is
   * dropped or, repeating, due again (see fireReminder). Resolves the agents that got a message,
   * and when the earliest reminder left is due.
   */
  fireReminders(now: number, limit: number): Promise<{ delivered: string[]; next?: number }>;
  /**
   * Takes the first message at `address`, waiting up to `timeoutMs` (ms) for one to come: the
   * answer to an `ask` from outside any run. One wait (Redis: one blocking connection) per call.
   */
  awaitMessage(address: string, timeoutMs: number): Promise<Message | undefined>;
}

/** What a key's first activation stores. */
export interface FirstState {
  /** The state, JSON (with references to values stored apart, for seedAgent). */
  state: string;
  version: number;
  /** Names this life of the key (a deleted key that comes back gets another): its turns' run ids start with it. */
  incarnation: string;
  /**
   * seedAgent only: the values `state` references, claimed for the key. (A first activation's
   * state is `state()` of its type, stored as it is.)
   */
  values?: ValueClaim;
}

/** A turn that starts: its run, the key's state as committed, the message it handles. */
export interface AgentActivation {
  /** The id the turn's run must have (`<incarnation>t<turn>`). */
  runId: string;
  /** The turn's number: 1 for the key's first. */
  turn: number;
  /** The committed state, JSON. */
  state: string;
  /** The version of that state. */
  version: number;
  message: Message;
  /**
   * Its run was made in the same transition, from {@link TurnEnd.nextRun} or a
   * {@link TurnRunTemplate}: `taken` by the worker they named (one run at most per transition, the
   * key's own next turn first), else `queued` (its first step's task is the caller's to add).
   */
  made?: 'taken' | 'queued';
}

/** How a turn ended, for {@link AgentStore.endTurn}. */
export interface TurnEnd {
  runId: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** The message the turn handled (taken off the inbox only if it is still at its head). */
  messageId: string;
  /** Completed: the new state, JSON (large values as references), and its version. */
  state?: string;
  version?: number;
  /**
   * Completed: the values `state` references, claimed for the key in place of the previous
   * state's (absent: it references none, and the previous state's claims go).
   */
  values?: ValueClaim;
  /** Failed or cancelled: why. */
  error?: RunError;
  /** Epoch ms. */
  now: number;
  /** Keep the key this long after the turn when its inbox is then empty (ms); absent: for ever. */
  idleTtlMs?: number;
  /**
   * Completed: the run of the key's next turn, made by the same transition should the next turn
   * start from the state committed here (then {@link AgentActivation.made}). A store may ignore
   * it (the caller then makes the run); one that makes it does so only for a next message in no
   * conversation, and only with this id.
   */
  nextRun?: NextTurnRun;
}

/**
 * How the run of an agent type's turn is made from the key's stored state, for a store to make it
 * in the transition that starts the turn (AgentStore.activateAgent, AgentStore.send): its
 * checkpoint is `{"shared":` + the state's JSON + `checkpointTail` (the turn flow's first frame),
 * as prepareRun would encode it. A store makes it only for a state of `version` of at most
 * `maxStateBytes` that references no value stored apart (a longer one may hold members that go
 * apart: the caller makes that run), for a message in no conversation (its turn is admitted
 * first), and a run id in the key's partition.
 */
export interface TurnRunTemplate {
  flow: string;
  fingerprint: string;
  checkpointTail: string;
  target: StepTarget;
  version: number;
  /** Bytes of JSON. */
  maxStateBytes: number;
  priority?: number;
  /**
   * The worker whose chain may run it (NewRun.takenBy): made `running` and among its taken tasks,
   * unless the transition took another run (AgentActivation.made).
   */
  takenBy?: string;
}

/**
 * A turn a step's send may start in the step's own transition (CommitFields.starts, RunStore.park):
 * agent `ref`'s, as {@link AgentStore.activateAgent} would start it, its run made from `run`.
 */
export interface TurnStart {
  ref: string;
  first: FirstState;
  run?: TurnRunTemplate;
}

/** What a transition did with a {@link TurnStart} it took: the turn it started, if any. */
export interface TurnStarted {
  ref: string;
  activation?: AgentActivation;
}

/**
 * The run of a key's next turn, as made from the state its turn commits (see
 * {@link TurnEnd.nextRun}): the fields of a new run (NewRun in kernel/run-store.ts) whose `turn`
 * the store fills in from the message it activates.
 */
export interface NextTurnRun {
  /** The next turn's run id, `turnRunId(incarnation, turn + 1)`. */
  id: string;
  flow: string;
  fingerprint: string;
  checkpoint: string;
  target: StepTarget;
  /** Epoch ms. */
  now: number;
  priority?: number;
  /**
   * The worker whose chain may run it (NewRun.takenBy): made `running` and among its taken tasks,
   * unless the transition took another run (AgentActivation.made).
   */
  takenBy?: string;
}

/** A key as stored. Times are epoch ms. */
export interface StoredAgent {
  type: string;
  key: string;
  /** The state, JSON. */
  state: string;
  version: number;
  /** Committed turns. */
  turns: number;
  /** The run id of the turn running now. */
  running?: string;
  /** Messages whose turn failed (or was cancelled), oldest first. */
  failed: DeadLetter[];
  /** Its pending reminders, the next due first. */
  reminders: ReminderInfo[];
  /** Turns started: the last turn's number (its run is `turnRunId(incarnation, turns started)`). */
  started: number;
  /** Names this life of the key (see {@link FirstState.incarnation}). */
  incarnation: string;
  /** Messages waiting in the inbox (the one being handled included). */
  inbox: number;
  /** The message at the head of the inbox: the running turn's, or the next turn's. */
  next?: Message;
  lastTurnAt?: number;
}

/** A message whose turn failed. */
export interface DeadLetter {
  message: Message;
  error: RunError;
  /** The turn's run. */
  runId: string;
  /** When it failed, epoch ms. */
  at: number;
}

/** What the run of an agent's turn records of it (StoredRun.turn). */
export interface AgentTurn {
  /** The agent's address. */
  agent: string;
  /** The turn's number: 1 for the key's first. */
  turn: number;
  /** The message the turn handles (`this.message`). */
  message: Message;
}

/** Turns listed by `agentHistory`: the last this many (their runs, while retained). */
export const MAX_TURNS_KEPT = 100;

/** Dead letters kept per key, oldest dropped first. */
export const MAX_DEAD_LETTERS = 100;

/** The run id of turn `turn` of the key life `incarnation`. */
export function turnRunId(incarnation: string, turn: number): string {
  return `${incarnation}t${turn}`;
}
