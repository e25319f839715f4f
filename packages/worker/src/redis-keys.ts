import { DEFAULT_QUEUE } from '@queueflow/runtime';

/**
 * Every Redis key and channel queueflow uses, built in one place (BullMQ's `QueueKeys` habit).
 *
 * The prefix carries a hash tag (`{qf}` by default) so that a Redis Cluster keeps all of one
 * partition's keys, BullMQ's included, in one hash slot: every Lua script may touch any of them.
 * A deployment of several partitions has one `RedisKeys` per partition (partitions.ts).
 */
export class RedisKeys {
  /**
   * The BullMQ queue holding the tasks of the default queue (BullMQ prefixes it with
   * {@link RedisKeys.prefix}); see {@link RedisKeys.stepQueueOf} for the others.
   */
  readonly stepQueue = 'steps';

  constructor(readonly prefix: string) {}

  /**
   * The BullMQ queue holding the tasks of queue `queue` (a node's `queue`): `steps` for the
   * default queue (as before queues were named), `steps.<queue>` for the others.
   */
  stepQueueOf(queue: string): string {
    return queue === DEFAULT_QUEUE ? this.stepQueue : `${this.stepQueue}.${queue}`;
  }

  /**
   * Hash: the deployment's settings every client and worker must agree on (`partitions`: how many
   * partitions its store has; partitions.ts). Partition 0's.
   */
  settings(): string {
    return `${this.prefix}:settings`;
  }

  /** Set: the names of the queues other than the default one that tasks were ever added to. */
  queues(): string {
    return `${this.prefix}:queues`;
  }

  /** Hash: schedule name → the id of the run that schedule started last (its overlap rule reads it). */
  scheduleRuns(): string {
    return `${this.prefix}:schedules:runs`;
  }

  /** Hash: schedule name → ticks it skipped because its last run had not ended. */
  scheduleSkips(): string {
    return `${this.prefix}:schedules:skipped`;
  }

  /** Hash: a run's record (status, step counter, checkpoint, timings, errors). */
  run(runId: string): string {
    return `${this.prefix}:run:${runId}`;
  }

  /** List: a run's error history (JSON ErrorRecords, oldest first, trimmed). */
  errors(runId: string): string {
    return `${this.prefix}:run:${runId}:errors`;
  }

  /** List: merge conflicts of the run's fan-ins (JSON MergeConflicts). */
  conflicts(runId: string): string {
    return `${this.prefix}:run:${runId}:conflicts`;
  }

  /** Hash: a waiting parent's fan-out (request, snapshot, counters). */
  fanOut(runId: string): string {
    return `${this.prefix}:run:${runId}:fanout`;
  }

  /** Hash: child index → outcome JSON, for a waiting parent. */
  outcomes(runId: string): string {
    return `${this.prefix}:run:${runId}:outcomes`;
  }

  /**
   * Hash: child index → the staged input of a child of the fan-out the run made at `step` (a child
   * run's first checkpoint, or an item), read as children start.
   */
  inputs(runId: string, step: number): string {
    return `${this.prefix}:run:${runId}:inputs:${step}`;
  }

  /**
   * List: a run's event log (JSON RunEvents, oldest first, the newest 200: kernel/run-event.ts),
   * written by the transitions it records; expires with the run. The Lua prelude builds it as
   * `run(id)` plus `:events` (logEvent in run-lifecycle.lua).
   */
  runEvents(runId: string): string {
    return `${this.run(runId)}:events`;
  }

  /** List: a run's step history records (JSON, oldest first, trimmed to the cap). */
  history(runId: string): string {
    return `${this.prefix}:run:${runId}:history`;
  }

  /**
   * Stream: the run's stream (`this.emit`), one entry per emit (`s` step, `a` attempt, `n` node,
   * `t` time, `d` data JSON, `i` item index) and an end marker (`end` status) per end of a run
   * that wrote entries or that a follower marked `followed` (follow-run.lua): a run that emitted
   * nothing and was not followed has none. Capped by XADD MAXLEN, expires with the run.
   */
  stream(runId: string): string {
    return `${this.prefix}:run:${runId}:stream`;
  }

  /**
   * String: a value of `shared` stored apart (the claim check), its JSON text, under the sha256
   * (hex) of that text. Kept while a run that claimed it is kept (see run-lifecycle.lua).
   */
  value(hash: string): string {
    return `${this.prefix}:value:${hash}`;
  }

  /**
   * String: the text of value `hash` staged by one transition before its script runs (`token`
   * tells transitions apart); the script renames it to `value(hash)` as it claims it. Expires
   * within the hour should the transition never land.
   */
  stagedValue(hash: string, token: string): string {
    return `${this.prefix}:value-staged:${hash}:${token}`;
  }

  /**
   * Sorted set: the runs (by id) and keyed agents (by address) that claimed value `hash` → when
   * each one's record expires (epoch ms; `+inf` while it is kept without expiry). The Lua prelude
   * builds it as `value(hash)` plus `:refs`.
   */
  valueRefs(hash: string): string {
    return `${this.value(hash)}:refs`;
  }

  /** What every value key starts with (`value(hash)` is this plus the hash). */
  valuePrefix(): string {
    return this.value('');
  }

  /** Set: the hashes of the values a run claimed; expires with the run. It is `run(runId)` plus {@link RedisKeys.valuesSuffix}. */
  runValues(runId: string): string {
    return `${this.run(runId)}${this.valuesSuffix()}`;
  }

  /**
   * Set: the hashes of the values keyed agent `ref`'s state references, claimed for it (only while
   * it references some; agent-lifecycle.lua). It is `agent(ref)` plus {@link RedisKeys.valuesSuffix}.
   */
  agentValues(ref: string): string {
    return `${this.agent(ref)}${this.valuesSuffix()}`;
  }

  /** What `runValues(id)` adds to `run(id)`, for scripts that have a run's key. */
  valuesSuffix(): string {
    return ':values';
  }

  /**
   * The four keys of budget `key` (flow control; see lua/budget-lifecycle.lua): window (zset),
   * meta (hash), leases (zset), waiters (zset), in that order, as the budget scripts take them.
   * Keys are per prefix: two deployments (prefixes) share no budget.
   */
  budget(key: string): [window: string, meta: string, leases: string, waiters: string] {
    const base = `${this.prefix}:budget:${key}`;
    return [`${base}:window`, `${base}:meta`, `${base}:leases`, `${base}:waiters`];
  }

  /**
   * Sorted set: budget key → the last time a visit drew from or waited for it (epoch ms), in
   * partition 0 with the budgets (acquire-budget.lua); for `Engine.budgets`.
   */
  budgets(): string {
    return `${this.prefix}:budgets`;
  }

  /** String: the run an idempotency key names (expires with that run). */
  idempotency(key: string): string {
    return `${this.prefix}:idempotency:${key}`;
  }

  /** Hash: live workers, id → worker JSON. */
  workers(): string {
    return `${this.prefix}:workers`;
  }

  /**
   * Set: the tasks worker `workerId` took to run itself and has not released: wake ids (direct
   * hand-off, CommitFields.takenBy) and first step task ids of fan-out children it started
   * (RunStore.createChildren); a survivor that takes the worker over makes them due.
   */
  taken(workerId: string): string {
    return `${this.prefix}:workers:taken:${workerId}`;
  }

  /** Sorted set: worker id → when its last heartbeat came (epoch ms, Redis server time). */
  workersSeen(): string {
    return `${this.prefix}:workers:seen`;
  }

  /** Pub/sub channel: `{ runId, status, steps }` whenever a (non-child) run changes, for live views. */
  changes(): string {
    return `${this.prefix}:changes`;
  }

  /** Hash: messages reserved by a run's current step (`a<n>` address, `m<n>` message of receive n). */
  reserved(runId: string): string {
    return `${this.prefix}:run:${runId}:reserved`;
  }

  /** List: the messages waiting at a mailbox address, oldest first (JSON Messages). */
  mailbox(address: string): string {
    return `${this.prefix}:mailbox:${address}`;
  }

  /**
   * Set: wake job ids of the runs parked on a mailbox address. In a namespace of its own, so no
   * address can name it (`<a>:waiters` is just another mailbox).
   */
  mailboxWaiters(address: string): string {
    return `${this.prefix}:waiters:${address}`;
  }

  /** What every run hash key starts with (`run(id)` is this plus the id), for scripts that create runs. */
  runPrefix(): string {
    return this.run('');
  }

  /**
   * Sorted set: the runs of this partition with hand-offs not yet applied (run id → since when,
   * epoch ms); a worker's heartbeat applies those that wait too long (run-lifecycle.lua, handOff).
   */
  handoffs(): string {
    return `${this.prefix}:handoffs`;
  }

  /**
   * Sorted set: the runs of this partition whose fan-out's children are being cancelled (run id →
   * when the cascade last went on, epoch ms): cancel-run.lua, or a child's end that failed its
   * parent fast, adds the run; the cascade removes it when every child is cancelled; a worker's
   * recovery sweep finishes one whose canceller died (kernel/cancel-run.ts, resumeCascades).
   */
  cascades(): string {
    return `${this.prefix}:cascades`;
  }

  /**
   * Sorted set: placements of fan-out children in other partitions under way (the parent's id, a
   * space and a token → since when, epoch ms): create-children.lua or child-ended.lua adds one,
   * the placer removes it once it has checked that the parent still waits. One left by a placer
   * that died is looked at by a worker's recovery sweep: a child it made for a parent that ended
   * meanwhile is cancelled (the parent joins its partition's cascades).
   */
  placements(): string {
    return `${this.prefix}:placements`;
  }

  /** List: a run's hand-offs to other partitions, oldest first (JSON; the Lua prelude builds it as `run(id)` plus `:handoffs`). */
  runHandoffs(runId: string): string {
    return `${this.run(runId)}:handoffs`;
  }

  /**
   * Hash: the messages of mailbox `address` (of this partition) held for run `runId` of another
   * partition (`<epoch>:<ordinal>` → message JSON; `<epoch>:done` once they are consumed or given
   * back).
   */
  held(runId: string, address: string): string {
    return `${this.heldPrefix()}${runId}:${address}`;
  }

  /** What every held hash key starts with (`held(runId, address)` is this plus `<run id>:<address>`). */
  heldPrefix(): string {
    return `${this.prefix}:held:`;
  }

  /**
   * What the key of the highest hand-off of a run this partition applied starts with (the run id
   * follows): apply-handoffs.lua applies each once. Kept for the retention.
   */
  handoffSeqPrefix(): string {
    return `${this.prefix}:handoff-seq:`;
  }

  /**
   * Hash: keyed agent `ref` (agent-lifecycle.lua names its short fields: state, version, turns,
   * incarnation, turn in flight, times), in the partition of its address, beside its inbox (the
   * mailbox at `ref`).
   */
  agent(ref: string): string {
    return `${this.prefix}:${ref}`; // `<prefix>:agent:<type>/<key>`: the address names it
  }

  /** List: agent `ref`'s dead letters (JSON objects: message, error, runId, at; oldest first, capped). */
  agentFailed(ref: string): string {
    return `${this.prefix}:agent-failed:${ref}`;
  }

  /** Sorted set (score 0, by address): the agents of this partition, for `Engine.agents`. */
  agents(): string {
    return `${this.prefix}:agents`;
  }

  /** Sorted set: agent address → when its turn in flight started or was last claimed (epoch ms). */
  agentsRunning(): string {
    return `${this.prefix}:agents:running`;
  }

  /**
   * Sorted set: agent address → when a message came to its inbox that may start no turn (its
   * deliverer may die first). Lua derives it from `mailboxPrefix()` (markAgentDue in run-lifecycle.lua).
   */
  agentsDue(): string {
    return `${this.prefix}:agents:due`;
  }

  /**
   * Hash: wait-for edges of the partition's parked turns, agent address → JSON `{ t, r, w, a, at }`
   * (the agent asked, the turn's run id, its wake id, the reply address, when; ParkRequest.ask),
   * while that park lasts. Lua derives it from `mailboxPrefix()` (askCycle in run-lifecycle.lua).
   */
  agentsAsking(): string {
    return `${this.prefix}:agents:asking`;
  }

  /**
   * String, expiring: set (NX) by the worker whose sweep answers the ask of wake `wakeId` with
   * its wait cycle, so that no other worker answers it too (RedisRunStore.failWaitCycles).
   */
  cycleAnswered(wakeId: string): string {
    return `${this.prefix}:agents:cycle-answered:${wakeId}`;
  }

  /** Sorted set: the partition's agents' reminders, `'<name> <address>'` → when due (epoch ms; reminders.lua). */
  reminders(): string {
    return `${this.prefix}:reminders`;
  }

  /** Hash: agent `ref`'s reminders (reminders.lua: `spec:<name>`, `body:<name>`). */
  agentReminders(ref: string): string {
    return `${this.prefix}:agent-reminders:${ref}`;
  }

  /** The three keys of shared memory `name`, in the order shared-memory.lua takes them. */
  memoryKeys(name: string): [string, string, string] {
    return [`${this.prefix}:memory:${name}`, `${this.prefix}:memory-log:${name}`, `${this.prefix}:memory-ids:${name}`];
  }

  /** The five keys of conversation `id`, in the order conversations.lua takes them. */
  conversationKeys(id: string): [string, string, string, string, string] {
    return [
      `${this.prefix}:conversation:${id}`,
      `${this.prefix}:conversation-log:${id}`,
      `${this.prefix}:conversation-running:${id}`,
      this.conversations(),
      `${this.prefix}:conversation-seen:${id}`,
    ];
  }

  /** Sorted set: the partition's conversations, id → when it began (epoch ms). */
  conversations(): string {
    return `${this.prefix}:conversations`;
  }

  /** The six keys of agent `ref`, in the order the agent scripts take them (agent-lifecycle.lua). */
  agentKeys(ref: string): [string, string, string, string, string, string] {
    return [
      this.agent(ref),
      this.mailbox(ref),
      this.agents(),
      this.agentsRunning(),
      this.agentsDue(),
      this.agentFailed(ref),
    ];
  }

  /** What every mailbox key starts with (`mailbox(address)` is this plus the address). */
  mailboxPrefix(): string {
    return this.mailbox('');
  }

  /** What every waiter set key starts with (`mailboxWaiters(address)` is this plus the address). */
  waitersPrefix(): string {
    return this.mailboxWaiters('');
  }

  /** The eight keys of a run, in the order every script that takes them expects. */
  runKeys(runId: string): [string, string, string, string, string, string, string, string] {
    return [
      this.run(runId),
      this.errors(runId),
      this.conflicts(runId),
      this.fanOut(runId),
      this.outcomes(runId),
      this.reserved(runId),
      this.history(runId),
      this.stream(runId),
    ];
  }

  /** Sorted set: run ids by creation time (ms), for listing. */
  runs(): string {
    return `${this.prefix}:runs`;
  }

  /** Sorted set: run id → when its record expires (epoch ms), for trimming the runs index. */
  runsExpiries(): string {
    return `${this.prefix}:runs:expiries`;
  }

  /** String: a counter that orders runs created in the same millisecond in the runs index. */
  runsSequence(): string {
    return `${this.prefix}:runs:seq`;
  }

  /** Pub/sub channel: `{ runId, status }` whenever a run ends, and cancel requests. */
  events(): string {
    return `${this.prefix}:events`;
  }
}

const PREFIX = /^[^\s:]+$/;

/**
 * Checks a configured prefix and gives it a hash tag: a prefix without `{` is wrapped in braces
 * (`b6acme` becomes `{b6acme}`, so the two name the same keys); one with `{` must hold a hash tag
 * as Redis Cluster reads it, the substring between the first `{` and the first `}` after it, not
 * empty. Without one, Cluster would hash each key whole and scatter a run's keys over slots
 * (every script would fail with `CROSSSLOT`).
 *
 * @param source - how to name the option in errors, e.g. `prefix` or `--prefix`.
 * @returns the prefix keys start with.
 * @throws TypeError naming `source`, the prefix and what is wrong: empty, a space or `:`, a `{`
 *   with no `}` after it (`a{b`), or an empty hash tag (`{}`, `x{}`).
 * @see https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags
 */
export function normalizePrefix(prefix: string | undefined, source = 'prefix'): string {
  const value = prefix ?? '{qf}';
  if (value === '') throw new TypeError(`expected \`${source}\` to be a non-empty string, got an empty string`);
  if (typeof value !== 'string' || !PREFIX.test(value)) {
    throw new TypeError(`expected \`${source}\` to be a string without spaces or ':', got \`${String(value)}\``);
  }
  const open = value.indexOf('{');
  if (open === -1) return `{${value}}`;
  const close = value.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) {
    const problem = close === -1 ? "its first '{' has no '}' after it" : 'its hash tag is empty';
    throw new TypeError(
      `expected \`${source}\` to hold a Redis Cluster hash tag (a non-empty text between the first '{' and the first '}' after it, as in '{qf}'), got \`${value}\`: ${problem}`,
    );
  }
  return value;
}
