import type { ConversationBudget, ConversationMessage, RunError } from '@queueflow/runtime';
import {
  MAX_CONVERSATION_MESSAGES,
  type ConversationReceipt,
  type ConversationStore,
  type ConversationTurn,
  type StoredConversation,
} from '@queueflow/runtime/kernel';
import type { Partitions } from './partitions.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * The conversation store on Redis (conversation-store.ts): a conversation's keys live in the
 * partition of its id, and each transition is one script there (conversations.lua).
 */
export class RedisConversationStore implements ConversationStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly partitions: Partitions,
    /** How long a conversation is kept after its last write, in seconds. */
    private readonly retentionSeconds: number,
  ) {}

  async begin(id: string, budget: ConversationBudget | undefined, now: number): Promise<void> {
    await this.redis.conversations(
      ...this.keys(id),
      'begin',
      id,
      budget ? JSON.stringify(budget) : '',
      String(now),
      this.retentionSeconds,
    );
  }

  async turnStarted(
    id: string,
    turn: ConversationTurn,
  ): Promise<{ admitted: true } | { admitted: false; error: RunError; running: string[] }> {
    const reply = (await this.redis.conversations(
      ...this.keys(id),
      'started',
      id,
      JSON.stringify(turn),
      MAX_CONVERSATION_MESSAGES,
      this.retentionSeconds,
    )) as ConversationsReply;
    return reply[0] === 1 ? { admitted: true } : { admitted: false, ...refusalOf(reply) };
  }

  async received(id: string, received: ConversationReceipt): Promise<void> {
    await this.redis.conversations(
      ...this.keys(id),
      'received',
      id,
      JSON.stringify(received),
      MAX_CONVERSATION_MESSAGES,
      this.retentionSeconds,
    );
  }

  async turnEnded(id: string, runId: string): Promise<void> {
    await this.redis.conversations(...this.keys(id), 'ended', id, runId);
  }

  async spend(
    id: string,
    spent: { ref: string; key: string; amount: number; now: number },
  ): Promise<{ ok: true } | { ok: false; error: RunError; running: string[] }> {
    const reply = (await this.redis.conversations(
      ...this.keys(id),
      'spend',
      id,
      JSON.stringify(spent),
      this.retentionSeconds,
    )) as ConversationsReply;
    return reply[0] === 1 ? { ok: true } : { ok: false, ...refusalOf(reply) };
  }

  async load(id: string): Promise<StoredConversation | undefined> {
    const [hash, log, running] = this.keys(id);
    const [fields, entries, runs] = (await this.redis
      .multi()
      .hgetall(hash)
      .lrange(log, 0, -1)
      .smembers(running)
      .exec())!.map(([error, value]) => {
      if (error) throw error;
      return value;
    }) as [Record<string, string>, string[], string[]];
    if (fields.status === undefined) return undefined;
    return {
      id,
      status: fields.status as StoredConversation['status'],
      turns: Number(fields.turns ?? 0),
      messages: Number(fields.messages ?? 0),
      participants: JSON.parse(fields.participants ?? '[]') as string[],
      log: entries.map((entry) => JSON.parse(entry) as ConversationMessage),
      running: runs.sort(),
      ...(fields.budget === undefined ? {} : { budget: JSON.parse(fields.budget) as ConversationBudget }),
      startedAt: Number(fields.startedAt),
      updatedAt: Number(fields.updatedAt),
      ...(fields.error === undefined ? {} : { error: JSON.parse(fields.error) as RunError }),
      ...(fields.spend === undefined
        ? {}
        : { spend: JSON.parse(fields.spend) as NonNullable<StoredConversation['spend']> }),
    };
  }

  async list(options: { limit: number; cursor?: string }): Promise<{ ids: string[]; cursor?: string }> {
    // Each partition's index is ordered by start; the pages are merged, newest first.
    const pages = await Promise.all(
      this.partitions.all.map((keys) => this.redis.zrevrange(keys.conversations(), 0, -1, 'WITHSCORES')),
    );
    const all = pages
      .flatMap((page) => {
        const pairs: { id: string; at: number }[] = [];
        for (let i = 0; i < page.length; i += 2) pairs.push({ id: page[i]!, at: Number(page[i + 1]) });
        return pairs;
      })
      .sort((a, b) => b.at - a.at || (a.id < b.id ? -1 : 1))
      .map((entry) => entry.id);
    // A conversation expired with its retention leaves its index entry: left out here, and dropped.
    const exists = await Promise.all(all.map((id) => this.redis.exists(this.keys(id)[0])));
    const live = all.filter((id, i) => {
      if (exists[i] === 1) return true;
      void this.redis.zrem(this.keys(id)[3], id).catch(() => {});
      return false;
    });
    const from = options.cursor === undefined ? 0 : live.indexOf(options.cursor) + 1;
    const ids = live.slice(from, from + options.limit);
    return from + options.limit < live.length ? { ids, cursor: ids.at(-1)! } : { ids };
  }

  private keys(id: string): [string, string, string, string, string] {
    return this.partitions.ofAddress(id).conversationKeys(id);
  }
}

/** What conversations.lua's `started` and `spend` answer: `{ 1 }`, or `{ 0, error JSON, running run ids }`. */
type ConversationsReply = [number, string?, string[]?];

/** A refused turn or an over-budget spend: why the conversation ended, and the runs of its running turns. */
function refusalOf(reply: ConversationsReply): { error: RunError; running: string[] } {
  return { error: JSON.parse(reply[1]!) as RunError, running: reply[2] ?? [] };
}
