import {
  parseAgentRef,
  decodeMessage,
  encodeMessage,
  type AgentActivation,
  type AgentStore,
  type DeadLetter,
  type FirstState,
  type Message,
  type StoredAgent,
  type TurnEnd,
  type TurnRunTemplate,
  type ReminderChange,
  type StoredReminder,
  type ValueClaim,
  reminderInfo,
  ONE_SHOT_GRACE_MS,
} from '@queueflow/runtime/kernel';
import type { RedisConnection } from './connection.js';
import { countChecked, groupBy, type Partitions } from './partitions.js';
import type { RedisKeys } from './redis-keys.js';
import type { ScriptedRedis } from './scripts.js';
import { dropStaged, stageTexts } from './staged-values.js';
import { activationOf, turnEndOptions, turnEndedOf, turnRunOptions } from './turn-scripts.js';

/**
 * The agent store on Redis (agent-store.ts): an agent's keys live in the partition of its address,
 * beside its inbox, and each transition is one script there (activate-agent.lua, end-turn.lua,
 * agent-ops.lua, with the agent-lifecycle.lua prelude).
 *
 * A large state's values (the claim check) are stored with the runs' values of the agent's
 * partition and claimed for the agent by the script that stores the state; their texts are staged
 * beforehand (staged-values.ts), one more round trip only when a state brings a value not stored yet.
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

  async activateAgent(
    ref: string,
    first: FirstState,
    now: number,
    run?: TurnRunTemplate,
  ): Promise<AgentActivation | undefined> {
    const keys = this.partitions.ofAddress(ref);
    const reply = (await this.redis.activateAgent(
      ...keys.agentKeys(ref),
      ref,
      String(now),
      JSON.stringify(first),
      keys.valuePrefix(),
      keys.valuesSuffix(),
      run === undefined ? '' : JSON.stringify(turnRunOptions(this.partitions, ref, run)),
    )) as string[];
    return activationOf(reply);
  }

  async send(
    agents: readonly { ref: string; first: FirstState | undefined; run?: TurnRunTemplate | undefined }[],
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
        // How each type's runs are made, once per script (the group's first agent of the type says).
        const templates: Record<string, Record<string, unknown>> = {};
        for (const { ref, run } of group) {
          const type = parseAgentRef(ref)?.type;
          if (run && type !== undefined) templates[type] ??= turnRunOptions(this.partitions, ref, run);
        }
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
              keys.valuePrefix(),
              keys.valuesSuffix(),
              JSON.stringify(templates),
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
    const keys = this.partitions.ofAddress(ref);
    const values = end.status === 'completed' ? end.values : undefined;
    const staged = await this.stage(keys, values);
    const reply = (await this.redis.endTurn(
      ...keys.agentKeys(ref),
      ref,
      end.runId,
      JSON.stringify(turnEndOptions(this.partitions, ref, end)),
      end.state ?? '',
      end.error === undefined ? '' : JSON.stringify(end.error),
      ...staged,
    )) as (string | number)[];
    const ended = turnEndedOf(reply);
    if (ended.result === 'stale') await dropStaged(this.redis, staged);
    return ended;
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
      keys.valuePrefix(),
      keys.valuesSuffix(),
      String(Date.now()),
    )) as [number, string?];
    if (existed === 0) return false;
    return running ? { running } : {};
  }

  async seedAgent(ref: string, first: FirstState): Promise<boolean> {
    const keys = this.partitions.ofAddress(ref);
    const { values, ...stored } = first;
    const staged = await this.stage(keys, values);
    const made = (await this.redis.agentOps(
      ...keys.agentKeys(ref),
      'seed',
      ref,
      JSON.stringify(values?.refs.length ? { ...stored, values: values.refs } : stored),
      keys.valuePrefix(),
      keys.valuesSuffix(),
      ...staged,
    )) as number;
    if (made !== 1) await dropStaged(this.redis, staged);
    return made === 1;
  }

  /**
   * Stages the texts a claim brings (stageTexts) in the partition of `keys`, with copies of the
   * values it references without their texts (stored already: a turn's run holds them) that this
   * partition does not hold, read from the partition that does (a turn's run may live in another).
   */
  private async stage(keys: RedisKeys, claim: ValueClaim | undefined): Promise<string[]> {
    if (!claim) return [];
    const texts = { ...claim.texts };
    const held = claim.refs.filter((hash) => texts[hash] === undefined);
    if (this.partitions.count > 1 && held.length > 0) {
      const here = await Promise.all(held.map((hash) => this.redis.exists(keys.value(hash))));
      for (const [i, hash] of held.entries()) {
        if (here[i] === 1) continue;
        for (const other of this.partitions.all) {
          const text = await this.redis.get(other.value(hash));
          if (text !== null) {
            texts[hash] = text;
            break;
          }
        }
      }
    }
    return stageTexts(this.redis, keys, texts);
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
