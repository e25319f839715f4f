import jsonPatch from 'fast-json-patch';
import { jsonCopy, type Json } from '../json/json.js';
import type {
  MessageReservations,
  OutgoingMessage,
  ParkRequest,
  StepMailboxPort,
  StepReplay,
} from '../interpreter/step-types.js';
import {
  checkAddress,
  checkAddresses,
  checkMessageBody,
  checkTimeout,
  type Mailbox,
  type Message,
  type ReceiveOptions,
  type Received,
  type SendOptions,
} from './message.js';
import { parseAgentRef } from '../agent/agent-ref.js';
import { InvalidArgumentError, QueueflowError } from '../errors/queueflow-error.js';
import { checkTopic } from './topic.js';
import {
  checkMemoryName,
  memoryConflict,
  SharedMemory,
  writeMemory,
  type MemoryChange,
  type SharedMemoryStore,
} from '../agent/shared-memory.js';
import type { ConversationReceipt } from '../agent/conversation-store.js';
import { checkReminderName, planReminder, type ReminderChange, type ReminderOptions } from '../agent/reminders.js';

/**
 * Thrown inside node code by `receive` on an empty mailbox: the step parks. A control signal, not
 * an error: the interpreter turns it into a `park` outcome, whatever the code did with it.
 */
class ParkSignal extends Error {
  constructor(readonly request: ParkRequest) {
    super(
      request.room
        ? `the step waits for room in the inbox of '${request.address}' (a parked run; not an error)`
        : `the step waits for a message at '${request.address}' (a parked run; not an error)`,
    );
    this.name = 'ParkSignal';
  }
}

/**
 * An agent's inbox is read by its turns alone (`this.message`).
 * @throws TypeError (code `INVALID_ARGUMENT`) for one.
 */
function checkReceivable(owner: string, address: string): void {
  if (parseAgentRef(address))
    throw new InvalidArgumentError(
      `${owner}: '${address}' is an agent's inbox, which only its turns read (this.message); send to it instead`,
    );
}

/** Who a step's messages come from, and where its publishes go. */
export interface StepSender {
  /** An agent's turn: its address, its number and the message it handles. */
  turn?: { agent: string; number?: number; message: Message } | undefined;
  /** The addresses of the subscribers of `topic` for `body` (the engine's agent types). */
  subscribers(topic: string, body: Json): string[];
  /** Counts a spend in the turn's conversation (absent outside one: nothing to count against). */
  spend?: ((key: string, amount: number) => Promise<void>) | undefined;
  /**
   * The bound of the inbox at `address` (an agent of a type with `capacity` that this process
   * knows) and how many messages it holds now; `undefined` for an unbounded mailbox.
   */
  inbox?: ((address: string) => Promise<InboxBound | undefined>) | undefined;
  /** Where `this.memory` reads and writes (the engine's store). */
  memories?: SharedMemoryStore | undefined;
  /** Records a message of conversation `id` this step received (ConversationStore.received). */
  received?: ((id: string, receipt: Omit<ConversationReceipt, 'runId' | 'now'>) => Promise<void>) | undefined;
}

/** A shared-memory update staged by a step (`this.memory(name).update`), written when it commits. */
interface StagedUpdate {
  name: string;
  change: MemoryChange;
  ifVersion?: number | undefined;
}

/** A bounded inbox as a send finds it (see {@link StepSender.inbox}). */
export interface InboxBound {
  capacity: number;
  onFull: 'reject' | 'park';
  /** Messages it holds now. */
  size: number;
}

/**
 * How often a step parked for room in a full inbox (`onFull: 'park'`) looks again, in ms. A timed
 * wake, not a waiter: the receiving agent's partition need not know who waits for its room.
 */
const ROOM_RECHECK_MS = 250;

/**
 * The mailbox of one step on an engine. Sends are buffered and leave with the step's commit
 * (exactly once); receives reserve messages that the commit consumes; a receive on an empty
 * mailbox parks the step, which then runs again from its start when woken. Calls are numbered
 * in call order, so a step that runs again meets the same messages (a deterministic step).
 */
export class StepMailbox implements Mailbox, StepMailboxPort {
  readonly outbox: OutgoingMessage[] = [];
  parkRequest: ParkRequest | undefined;
  private readonly timedOut = new Set<number>();
  /** This step's own reply addresses (`replyAddress`). */
  private readonly ownReplies = new Set<string>();
  /**
   * Own reply addresses whose question has not left yet (it leaves with the step's commit or
   * park): nothing can be waiting there, so a receive on one parks without asking the store.
   */
  private readonly unanswered = new Set<string>();
  /** The reply addresses of this turn's asks → the address asked (ParkRequest.ask). */
  private readonly asked = new Map<string, string>();
  private sends = 0;
  private receives = 0;
  private replies = 0;

  /** A `handoff` in `transfer` mode: the turn ends with this step (see {@link StepMailboxPort.handedOff}). */
  handedOff = false;
  /** Reminders set or cancelled, in call order (see {@link StepMailboxPort.reminders}). */
  readonly reminders: ReminderChange[] = [];
  /** Shared-memory updates staged, in call order: written at the step's end (writeMemories). */
  private readonly memoryUpdates: StagedUpdate[] = [];
  /** Messages received in a conversation, recorded in it before the commit (beforeCommit). */
  private readonly receipts: Message[] = [];

  constructor(
    private readonly reservations: MessageReservations,
    private readonly ids: { runId: string; step: number; attempt?: number; trace?: string | undefined },
    private readonly replay: StepReplay,
    private readonly now: () => number,
    private readonly sender: StepSender = { subscribers: () => [] },
  ) {}

  /** What the step, parked now, must find when it runs again. */
  replayAfterPark(): StepReplay {
    return {
      sent: this.sends,
      ...(this.parkRequest ? { parked: this.parkRequest } : {}),
      ...(this.timedOut.size > 0 ? { timedOut: [...this.timedOut].sort((a, b) => a - b) } : {}),
    };
  }

  async send(to: string, body: Json, options: SendOptions = {}): Promise<void> {
    const address = this.route(checkAddress('send', to));
    if (options.replyTo) checkAddress('send', options.replyTo, 'replyTo');
    checkMessageBody(body, `message body sent to '${address}'`);
    const asks = options.replyTo !== undefined && this.ownReplies.has(options.replyTo);
    const waiting = asks ? this.waitingOn(address) : undefined;
    if (asks && this.sender.turn) this.asked.set(options.replyTo!, address);
    // After a receive parked the step, nothing it does counts: the step will run again (code
    // that caught the park signal must not get its fallback's sends delivered).
    if (this.parkRequest) return;
    if (this.sends < this.replay.sent) {
      this.sends++;
      return; // delivered when this step parked before
    }
    await this.checkRoom(address);
    const ordinal = this.sends++;
    if (asks) this.unanswered.add(options.replyTo!);
    const message = this.message(ordinal, body);
    if (options.replyTo) message.replyTo = options.replyTo;
    if (waiting?.length) message.waiting = waiting;
    this.outbox.push({ address, message });
  }

  /**
   * The agents that wait when this step asks `address`: those waiting on the turn's own message
   * (an ask), then this agent. One of them asked would never answer: its turn waits on this one.
   * @throws QueueflowError `ASK_CYCLE` naming the chain, at once (no timeout waited out).
   */
  private waitingOn(address: string): string[] | undefined {
    const turn = this.sender.turn;
    if (!turn) return undefined;
    const waiting = [...(turn.message.replyTo === undefined ? [] : (turn.message.waiting ?? [])), turn.agent];
    if (waiting.includes(address)) throw askCycle([...waiting.slice(waiting.indexOf(address)), address]);
    return waiting;
  }

  async publish(topic: string, body: Json): Promise<void> {
    checkTopic('publish', topic);
    checkMessageBody(body, `message body published on '${topic}'`);
    const addresses = this.sender.subscribers(topic, body).map((address) => this.route(address));
    if (this.parkRequest) return;
    const ordinal = this.sends++; // one send: every subscriber gets the same message id
    if (ordinal < this.replay.sent) return;
    const message = { ...this.message(ordinal, body), topic };
    for (const address of addresses) {
      // As `engine.publish`: a subscriber whose bounded inbox is full does not get the body.
      const bound = await this.sender.inbox?.(address);
      if (bound && this.heldFor(address, bound) >= bound.capacity) continue;
      this.outbox.push({ address, message });
    }
  }

  /**
   * A send to a bounded inbox that is full (its messages and this step's sends to it not yet
   * delivered reach its `capacity`): refused with `MAILBOX_FULL`, or (`onFull: 'park'`) the step
   * parks and runs again from its start a moment later ({@link ROOM_RECHECK_MS}), holding no slot.
   * The check is made here, the message leaves at the step's commit: steps sending to the same
   * inbox at once can each find room, and overshoot the capacity by their number.
   * @throws QueueflowError `MAILBOX_FULL` (retryable: the node's retries and backoff apply).
   */
  private async checkRoom(address: string): Promise<void> {
    const bound = await this.sender.inbox?.(address);
    if (!bound || this.heldFor(address, bound) < bound.capacity) return;
    if (bound.onFull === 'reject')
      throw new QueueflowError(
        'MAILBOX_FULL',
        `send: the inbox of '${address}' holds ${bound.capacity} messages, its type's capacity: try again later`,
      );
    this.parkRequest = {
      ordinal: this.sends,
      address,
      addresses: [],
      deadline: this.now() + ROOM_RECHECK_MS,
      room: true,
    };
    throw new ParkSignal(this.parkRequest);
  }

  /** Messages `address` holds, counting this step's sends to it that have not left yet. */
  private heldFor(address: string, bound: InboxBound): number {
    return bound.size + this.outbox.filter((sent) => sent.address === address).length;
  }

  /**
   * `handoff` in `transfer` mode: sends `body` to agent `ref` as the turn's message handed on (its
   * sender and `replyTo` kept, this agent added to `via`), and the turn ends when this step commits.
   * @throws TypeError (code `INVALID_ARGUMENT`) outside an agent's turn.
   */
  async transfer(to: string, body: Json): Promise<void> {
    const ref = this.route(to);
    checkMessageBody(body, `message body handed off to '${to}'`);
    const handled = this.sender.turn;
    if (!handled)
      throw new InvalidArgumentError(
        `handoff: 'transfer' hands on the message of an agent's turn; this step runs no turn`,
      );
    if (this.parkRequest) return;
    if (this.sends >= this.replay.sent) await this.checkRoom(ref);
    const ordinal = this.sends++;
    this.handedOff = true;
    if (ordinal < this.replay.sent) return;
    const message = this.message(ordinal, body);
    if (handled.message.from === undefined) delete message.from;
    else message.from = handled.message.from;
    if (handled.message.replyTo !== undefined) message.replyTo = handled.message.replyTo;
    // The original askers still wait (this agent no longer does): a cycle back to them is one.
    if (handled.message.waiting?.length) message.waiting = handled.message.waiting;
    message.via = [...(handled.message.via ?? []), handled.agent];
    this.outbox.push({ address: ref, message });
  }

  /**
   * `this.remind`: sets reminder `name` of this turn's agent (replacing one of that name) when
   * the step commits.
   * @throws TypeError (code `INVALID_ARGUMENT`) outside an agent's turn; QueueflowError
   *   `INVALID_OPTION` for a bad name or option.
   */
  remind(name: string, options: ReminderOptions): void {
    const reminder = planReminder(name, options, this.now());
    this.turnOf('remind');
    if (!this.parkRequest) this.reminders.push({ name, reminder });
  }

  /**
   * What `this.spend` counts against beside the node's `limits`: the conversation of this
   * step's turn (at once: a failed try's spend counts too); `undefined` outside one.
   */
  get conversationSpend(): ((key: string, amount: number) => Promise<void>) | undefined {
    return this.sender.spend;
  }

  /** `this.cancelReminder`: cancels reminder `name` of this turn's agent when the step commits. */
  cancelReminder(name: string): void {
    checkReminderName(name);
    this.turnOf('cancelReminder');
    if (!this.parkRequest) this.reminders.push({ name, cancel: true });
  }

  private turnOf(owner: string): { agent: string; message: Message } {
    const turn = this.sender.turn;
    if (!turn) throw new InvalidArgumentError(`${owner}: reminders belong to agents; this step runs no agent's turn`);
    return turn;
  }

  /**
   * Where a send to `address` goes: in a forked conversation, to the fork of a participant
   * (`Message.forks`); else to `address`.
   */
  private route(address: string): string {
    return this.sender.turn?.message.forks?.[address] ?? address;
  }

  /** The message of send number `ordinal` of this step (its id survives the step running again). */
  private message(ordinal: number, body: Json): Message {
    const from = this.sender.turn?.agent ?? this.ids.runId;
    // A plain run takes part in the conversation of the last message it received in this step
    // (an ask it answers, say): what it sends carries it on.
    const conversation = this.sender.turn ? this.sender.turn.message.conversation : this.receipts.at(-1)?.conversation;
    const forks = this.sender.turn?.message.forks;
    return {
      id: `${this.ids.runId}.${this.ids.step}.s${ordinal}`,
      body: jsonCopy(body),
      sentAt: this.now(),
      from,
      ...(conversation === undefined ? {} : { conversation }),
      ...(forks === undefined ? {} : { forks }),
      ...(this.ids.trace === undefined ? {} : { trace: this.ids.trace }),
    };
  }

  async receive(address: string, options: ReceiveOptions = {}): Promise<Message | undefined> {
    checkReceivable('receive', checkAddress('receive', address));
    const timeoutMs = checkTimeout('receive', options.timeoutMs);
    if (this.parkRequest) throw new ParkSignal(this.parkRequest); // parking already: go no further
    const ordinal = this.receives++;
    if (this.replay.timedOut?.includes(ordinal)) return this.timeOut(ordinal);
    const message = this.unanswered.has(address) ? undefined : await this.reservations.reserve(ordinal, address);
    if (message?.cycle) throw askCycle(message.cycle); // the store's answer: the ask closed a cycle
    if (message) this.note(message);
    return message ?? this.park(ordinal, [address], timeoutMs);
  }

  /**
   * One receive call (one ordinal) over several mailboxes: the message reserved for it before,
   * else the head of the first of `addresses` holding one; else the step parks on all of them.
   */
  async receiveAny(addresses: readonly string[], options: ReceiveOptions = {}): Promise<Received | undefined> {
    const checked = checkAddresses('receiveAny', addresses);
    for (const address of checked) checkReceivable('receiveAny', address);
    const timeoutMs = checkTimeout('receiveAny', options.timeoutMs);
    if (this.parkRequest) throw new ParkSignal(this.parkRequest);
    const ordinal = this.receives++;
    if (this.replay.timedOut?.includes(ordinal)) return this.timeOut(ordinal);
    const open = checked.filter((address) => !this.unanswered.has(address));
    const received = open.length === 0 ? undefined : await this.reservations.reserveAny(ordinal, open);
    if (received) this.note(received.message);
    return received ?? this.park(ordinal, checked, timeoutMs);
  }

  /**
   * Receive call `ordinal` found nothing at `addresses`: it times out (`undefined`) once its
   * deadline has passed, else the step parks on them. A step woken from the same wait keeps the
   * deadline it parked with.
   */
  private park(ordinal: number, addresses: string[], timeoutMs: number | undefined): undefined {
    const parked = this.replay.parked;
    const sameWait =
      parked?.ordinal === ordinal && (parked.addresses ?? [parked.address]).join(' ') === addresses.join(' ');
    const deadline = sameWait ? parked.deadline : timeoutMs === undefined ? null : this.now() + timeoutMs;
    if (deadline !== null && this.now() >= deadline) return this.timeOut(ordinal);
    const asked = addresses.length === 1 ? this.asked.get(addresses[0]!) : undefined;
    const ask = asked === undefined ? undefined : { from: this.sender.turn!.agent, to: asked };
    this.parkRequest = {
      ordinal,
      address: addresses[0]!,
      deadline,
      ...(addresses.length > 1 ? { addresses } : {}),
      ...(ask ? { ask } : {}),
    };
    throw new ParkSignal(this.parkRequest);
  }

  /**
   * `this.memory(name)`: reads shared memory `name`; its updates are written when the step ends.
   * @throws QueueflowError `INVALID_OPTION` for a bad name, or off an engine with a store.
   */
  async memory(name: string): Promise<SharedMemory> {
    checkMemoryName('memory', name);
    const store = this.sender.memories;
    if (!store)
      throw new QueueflowError(
        'INVALID_OPTION',
        `memory: shared memory lives in an engine's store; this step runs on none`,
        { retryable: false },
      );
    const read = await store.read(name);
    // What this step staged for it already shows (its updates apply in order).
    let value = read.value;
    for (const staged of this.memoryUpdates)
      if (staged.name === name)
        value = jsonPatch.applyPatch(value, staged.change.patch, false, false).newDocument as Json;
    return new SharedMemory(
      name,
      value,
      read.version,
      (patch, ifVersion) => {
        if (this.parkRequest) return; // the step runs again, and stages it again
        const change = {
          version: 0, // the store's next, when written
          // A try of `exec` retried stages its own: the try is in the id.
          id: `${this.ids.runId}.${this.ids.step}.${this.ids.attempt ?? 0}.m${this.memoryUpdates.length}`,
          writer: this.sender.turn?.agent ?? this.ids.runId,
          at: this.now(),
          patch,
        };
        this.memoryUpdates.push({ name, change, ifVersion });
      },
      (patch, ifVersion) => memoryConflict(store, name, patch, ifVersion, read.version),
    );
  }

  /**
   * Writes the staged updates, one write per memory (its updates' patches in order, under the
   * id of its first, with the first `ifVersion` given), then records the messages received in a
   * conversation.
   */
  async beforeCommit(): Promise<void> {
    const byName = new Map<string, { change: MemoryChange; ifVersion: number | undefined }>();
    for (const { name, change, ifVersion } of this.memoryUpdates) {
      const merged = byName.get(name);
      if (!merged) byName.set(name, { change: { ...change, patch: [...change.patch] }, ifVersion });
      else {
        merged.change.patch.push(...change.patch);
        merged.ifVersion ??= ifVersion;
      }
    }
    for (const [name, { change, ifVersion }] of byName)
      await writeMemory(this.sender.memories!, name, { ...change, at: this.now() }, ifVersion);
    await this.recordReceipts();
  }

  async recordReceipts(): Promise<void> {
    for (const message of this.receipts) {
      const turn = this.sender.turn;
      await this.sender.received?.(message.conversation!, {
        to: turn?.agent ?? this.ids.runId,
        turn: turn?.number ?? 0,
        message: { id: message.id, ...(message.from === undefined ? {} : { from: message.from }), at: message.sentAt },
      });
    }
  }

  tryStarted(): number {
    return this.memoryUpdates.length;
  }

  tryFailed(mark: number): void {
    this.memoryUpdates.length = mark;
  }

  stagedMemory(): Json | undefined {
    return this.memoryUpdates.length === 0 ? undefined : (jsonCopy(this.memoryUpdates as unknown as Json) as Json);
  }

  restoreMemory(staged: Json): void {
    this.memoryUpdates.unshift(...(staged as unknown as StagedUpdate[]));
  }

  /** A message this step received: one of a conversation is recorded in it (beforeCommit). */
  private note(message: Message): void {
    if (message.conversation !== undefined) this.receipts.push(message);
  }

  replyAddress(): string {
    const address = `${this.ids.runId}.${this.ids.step}.reply${this.replies++}`;
    this.ownReplies.add(address);
    return address;
  }

  private timeOut(ordinal: number): undefined {
    this.timedOut.add(ordinal);
    return undefined;
  }
}

/**
 * An ask that would close a wait cycle: `chain` from the asker, each waiting for the next one's
 * answer, back to the asker. Found at once from the turn's own chain (`waiting`), or by the store
 * from the turns already waiting (Message.cycle).
 */
function askCycle(chain: readonly string[]): QueueflowError {
  return new QueueflowError(
    'ASK_CYCLE',
    `ask: '${chain.at(-2)}' asking '${chain.at(-1)}' would close a wait cycle: ${chain.join(' → ')} (each waits for the next one's answer)`,
    { retryable: false },
  );
}
