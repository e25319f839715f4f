import {
  parseAgentRef,
  decodeMessage,
  encodeMessage,
  MAX_DEAD_LETTERS,
  type AgentActivation,
  type AgentStore,
  type DeadLetter,
  type FirstState,
  type Message,
  type StoredAgent,
  type TurnEnd,
  type ReminderChange,
  type StoredReminder,
  reminderInfo,
  ONE_SHOT_GRACE_MS,
} from '@queueflow/runtime/kernel';
import type { RedisConnection } from './connection.js';
import { countChecked, groupBy, type Partitions } from './partitions.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * The agent store on Redis (agent-store.ts): an agent's keys live in the partition of its address,
 * beside its inbox, and each transition is one script there (activate-agent.lua, end-turn.lua,
 * agent-ops.lua, with the agent-lifecycle.lua prelude).
 */
export class RedisAgentStore implements AgentStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly partitions: Partitions,
    /** Opens a connection for one blocking wait (`awaitMessage`); the caller's is never blocked. */
    private readonly blocking: () => RedisConnection,
    /** How long a mailbox nobody touches is kept, in seconds (a reminder's message goes to one). */
    private readonly retentionSeconds: number,
  ) {}

  async activateAgent(ref: string, first: FirstState, now: number): Promise<AgentActivation | undefined> {
    const reply = (await this.redis.activateAgent(
      ...this.partitions.ofAddress(ref).agentKeys(ref),
      ref,
      String(now),
      JSON.stringify(first),
    )) as string[];
    return activationOf(reply);
  }

  async send(
    agents: readonly { ref: string; first: FirstState | undefined }[],
    message: Message,
    now: number,
  ): Promise<{ wakes: string[]; activation?: AgentActivation }[]> {
    const encoded = encodeMessage(message); // once for every inbox
    const replies = new Array<{ wakes: string[]; activation?: AgentActivation }>(agents.length);
    const byPartition = groupBy(
      agents.map((agent, at) => ({ ...agent, at })),
      ({ ref }) => this.partitions.indexOfAddress(ref),
    );
    await Promise.all(
      [...byPartition].map(async ([index, group]) => {
        const keys = this.partitions.all[index]!;
        const [, ...sent] = await countChecked(
          this.redis,
          this.partitions,
          index,
          'RedisAgentStore',
          async () =>
            (await this.redis.sendToAgent(
              1 + 7 * group.length,
              keys.settings(),
              ...group.flatMap(({ ref }) => [...keys.agentKeys(ref), keys.mailboxWaiters(ref)]),
              String(now),
              encoded,
              this.retentionSeconds,
              this.partitions.count,
              ...group.flatMap(({ ref, first }) => [ref, first === undefined ? '' : JSON.stringify(first)]),
            )) as [number, ...[string, ...string[]][]],
        );
        group.forEach(({ at }, j) => {
          const [wake, ...turn] = sent[j]!;
          const wakes = wake ? [wake] : [];
          const activation = activationOf(turn);
          replies[at] = activation ? { wakes, activation } : { wakes };
        });
      }),
    );
    return replies;
  }

  async endTurn(ref: string, end: TurnEnd): Promise<{ result: 'ended' | 'stale'; next?: AgentActivation }> {
    const reply = (await this.redis.endTurn(
      ...this.partitions.ofAddress(ref).agentKeys(ref),
      ref,
      end.runId,
      JSON.stringify({
        status: end.status,
        messageId: end.messageId,
        version: end.version ?? 1,
        now: String(end.now),
        idleTtlMs: end.idleTtlMs ?? 0,
        remindersKey: this.partitions.ofAddress(ref).agentReminders(ref),
        maxDeadLetters: MAX_DEAD_LETTERS,
      }),
      end.state ?? '',
      end.error === undefined ? '' : JSON.stringify(end.error),
    )) as (string | number)[];
    if (reply.length === 0) return { result: 'stale' };
    const next = activationOf(reply.slice(1) as string[]);
    return next ? { result: 'ended', next } : { result: 'ended' };
  }

  async loadAgent(ref: string): Promise<StoredAgent | undefined> {
    const keys = this.partitions.ofAddress(ref);
    const [hash, inbox, next, failed, reminders] = (await this.redis
      .multi()
      .hgetall(keys.agent(ref))
      .llen(keys.mailbox(ref))
      .lindex(keys.mailbox(ref), 0)
      .lrange(keys.agentFailed(ref), 0, -1)
      .hgetall(keys.agentReminders(ref))
      .exec())!.map(([error, value]) => {
      if (error) throw error;
      return value;
    }) as [Record<string, string>, number, string | null, string[], Record<string, string>];
    if (hash.st === undefined) return undefined;
    return {
      ...parseAgentRef(ref)!, // type and key: the address holds them
      state: hash.st,
      version: Number(hash.v ?? 1),
      turns: Number(hash.t ?? 0),
      started: Number(hash.n ?? 0),
      incarnation: hash.i ?? '',
      ...(hash.r === undefined ? {} : { running: hash.r }),
      failed: failed.map((letter) => JSON.parse(letter) as DeadLetter),
      reminders: Object.entries(reminders)
        .filter(([field]) => field.startsWith('spec:'))
        .map(([field, spec]) => reminderInfo(field.slice(5), { ...(JSON.parse(spec) as StoredReminder), body: null }))
        .sort((a, b) => a.due - b.due),
      inbox,
      ...(next === null ? {} : { next: decodeMessage(next) }),
      ...(hash.l === undefined ? {} : { lastTurnAt: Number(hash.l) }),
    };
  }

  async listAgents(options: {
    type?: string;
    limit: number;
    cursor?: string;
  }): Promise<{ refs: string[]; cursor?: string }> {
    // Each partition's index is ordered by address; the pages are merged.
    const from =
      options.cursor === undefined
        ? options.type === undefined
          ? '-'
          : `[agent:${options.type}/`
        : `(${options.cursor}`;
    const to = options.type === undefined ? '+' : `(agent:${options.type}0`; // '0' follows '/'
    const pages = await Promise.all(
      this.partitions.all.map((keys) => this.redis.zrangebylex(keys.agents(), from, to, 'LIMIT', 0, options.limit + 1)),
    );
    const refs = pages
      .flat()
      .filter((ref) => options.type === undefined || parseAgentRef(ref)?.type === options.type)
      .sort();
    // A key deleted by its idle time leaves its index entry: left out here, and dropped.
    const exists = await Promise.all(refs.map((ref) => this.redis.exists(this.partitions.ofAddress(ref).agent(ref))));
    const live = refs.filter((ref, i) => {
      if (exists[i] === 1) return true;
      void this.redis.zrem(this.partitions.ofAddress(ref).agents(), ref).catch(() => {});
      return false;
    });
    const page = live.slice(0, options.limit);
    return live.length > options.limit ? { refs: page, cursor: page.at(-1)! } : { refs: page };
  }

  async deleteAgent(ref: string): Promise<{ running?: string } | false> {
    const keys = this.partitions.ofAddress(ref);
    const [existed, running] = (await this.redis.agentOps(
      ...keys.agentKeys(ref),
      'delete',
      ref,
      keys.agentReminders(ref),
      keys.reminders(),
    )) as [number, string?];
    if (existed === 0) return false;
    return running ? { running } : {};
  }

  async seedAgent(ref: string, first: FirstState): Promise<boolean> {
    const made = (await this.redis.agentOps(
      ...this.partitions.ofAddress(ref).agentKeys(ref),
      'seed',
      ref,
      JSON.stringify(first),
    )) as number;
    return made === 1;
  }

  async redeliver(ref: string, messageId: string): Promise<boolean> {
    const moved = (await this.redis.agentOps(
      ...this.partitions.ofAddress(ref).agentKeys(ref),
      'redeliver',
      ref,
      messageId,
      String(Date.now()),
    )) as number;
    return moved === 1;
  }

  async turnsDue(before: number, now: number): Promise<{ ref: string; runId: string }[]> {
    const due: { ref: string; runId: string }[] = [];
    for (const keys of this.partitions.all) {
      const refs = (await this.redis.claimDue(keys.agentsRunning(), before, now, 50)) as string[];
      for (const ref of refs) {
        const running = await this.redis.hget(keys.agent(ref), 'r');
        if (running) due.push({ ref, runId: running });
        else await this.redis.zrem(keys.agentsRunning(), ref);
      }
    }
    return due;
  }

  async inboxesDue(before: number, now: number): Promise<string[]> {
    const due: string[] = [];
    for (const keys of this.partitions.all)
      due.push(...((await this.redis.claimDue(keys.agentsDue(), before, now, 50)) as string[]));
    return due;
  }

  async changeReminders(ref: string, changes: ReminderChange[]): Promise<void> {
    const keys = this.partitions.ofAddress(ref);
    const encoded = changes.map((change) =>
      'cancel' in change
        ? { name: change.name, cancel: true }
        : {
            name: change.name,
            due: Math.round(change.reminder.due),
            ...(change.reminder.every === undefined ? {} : { every: change.reminder.every }),
            missed: change.reminder.missed,
            body: JSON.stringify(change.reminder.body),
          },
    );
    await this.redis.reminders(2, keys.reminders(), keys.agentReminders(ref), 'change', ref, JSON.stringify(encoded));
  }

  async fireReminders(now: number, limit: number): Promise<{ delivered: string[]; next?: number }> {
    const delivered: string[] = [];
    let next: number | undefined;
    for (const keys of this.partitions.all) {
      if (delivered.length >= limit) {
        next = Math.min(next ?? Infinity, now); // partitions not looked at may have some due
        break;
      }
      const options = {
        now: Math.floor(now),
        limit: limit - delivered.length,
        graceMs: ONE_SHOT_GRACE_MS,
        mailboxPrefix: keys.mailboxPrefix(),
        reminderPrefix: keys.agentReminders(''),
        retention: this.retentionSeconds,
      };
      const [refs, first] = (await this.redis.reminders(1, keys.reminders(), 'fire', JSON.stringify(options))) as [
        string[],
        string | null,
      ];
      delivered.push(...refs);
      if (first !== null && first !== undefined) next = Math.min(next ?? Infinity, Number(first));
    }
    return next === undefined ? { delivered } : { delivered, next };
  }

  async awaitMessage(address: string, timeoutMs: number): Promise<Message | undefined> {
    const key = this.partitions.ofAddress(address).mailbox(address);
    const now = await this.redis.lpop(key);
    if (now !== null) return decodeMessage(now);
    if (timeoutMs <= 0) return undefined;
    const connection = this.blocking();
    try {
      // BLPOP takes its timeout in seconds (decimals since Redis 6).
      const popped = await connection.blpop(key, timeoutMs / 1000);
      return popped ? decodeMessage(popped[1]) : undefined;
    } finally {
      connection.disconnect();
    }
  }
}

/** A started turn from a script's reply `{ run id, turn, state, version, message JSON }`. */
function activationOf(reply: (string | number)[]): AgentActivation | undefined {
  if (reply.length < 5) return undefined;
  const [runId, turn, state, version, message] = reply as [string, number, string, string, string];
  return { runId, turn: Number(turn), state, version: Number(version), message: decodeMessage(message) };
}
