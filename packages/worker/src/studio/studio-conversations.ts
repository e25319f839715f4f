/**
 * The studio API's conversation routes (README "Conversations"), for the Conversations page: a
 * page of conversations with their summaries, one conversation as the engine records it, one turn
 * of it with the state it changed, and a fork at a message.
 */
import jsonPatch from 'fast-json-patch';
import type { Json } from '@queueflow/runtime';
import type {
  ConversationFork,
  ConversationInfo,
  JsonObject,
  Message,
  PatchOperation,
  RunStatus,
  StudioEngine,
} from './studio-engine.js';
import { StudioHttpError } from './studio-http-error.js';
import { conversationIdOf, jsonPatchOf, messageIdOf, objectOf, optionalIntegerOf, runIdOf } from './studio-input.js';

/** The engine's method `name`, or a 501 when it has none (StudioApi's `need`). */
export type NeedMethod = <K extends keyof StudioEngine>(name: K) => NonNullable<StudioEngine[K]>;

/** One conversation in `GET /api/conversations`: its record without the messages and waits themselves. */
interface ConversationSummary {
  id: string;
  status: ConversationInfo['status'];
  turns: number;
  participants: string[];
  /** Messages in its record (the last 1,000). */
  messages: number;
  /** Turns parked now. */
  waits: number;
  /** What its turns spent, per key, over all its agents. */
  spent: Record<string, number>;
  budget?: ConversationInfo['budget'];
  startedAt: number;
  updatedAt: number;
  error?: ConversationInfo['error'];
}

/** `GET /api/conversations`: one page, newest first; `cursor` reads the next. */
export interface ConversationsPageBody {
  conversations: ConversationSummary[];
  cursor?: string;
}

/**
 * `GET /api/conversation/turn?run=`: the run of a turn (or of a plain run that took part), what
 * it changed in its `shared` (an agent's turn: the agent's state) from its first recorded step to
 * its last committed one, and the message it handled when the engine still lists it.
 */
export interface ConversationTurnBody {
  runId: string;
  status: RunStatus;
  /** The agent whose turn it is (absent for a plain run). */
  ref?: string;
  turn?: number;
  /** The message the turn handled, as sent (from `agentHistory`: once its turn has ended). */
  message?: Message;
  before: JsonObject;
  after: JsonObject;
  /** The committed steps' patches, in order. */
  patch: PatchOperation[];
  /** Committed steps it counts. */
  steps: number;
}

/** Most conversations on one page: each is read whole to be summed up. */
const MAX_CONVERSATIONS_PAGE = 100;

/** The Conversations page's routes, over the engine methods `need` hands out. */
export class StudioConversations {
  constructor(private readonly need: NeedMethod) {}

  /** `GET /api/conversations?limit=&cursor=`. */
  async page(query: URLSearchParams): Promise<ConversationsPageBody> {
    const limit = optionalIntegerOf(query.get('limit') ?? undefined, 'limit', 25, 1, MAX_CONVERSATIONS_PAGE);
    const cursorParam = query.get('cursor') || undefined;
    const cursor = cursorParam === undefined ? undefined : conversationIdOf(cursorParam, 'cursor');
    const listed = await this.need('conversations')({ limit, ...(cursor === undefined ? {} : { cursor }) });
    const read = this.need('conversation');
    // A conversation listed a moment ago may have expired since: it is left out.
    const infos = await Promise.all(listed.ids.map((id) => read(id)));
    return {
      conversations: infos.filter((info) => info !== undefined).map(summaryOf),
      ...(listed.cursor === undefined ? {} : { cursor: listed.cursor }),
    };
  }

  /** `GET /api/conversation?id=`: the engine's record. */
  async one(query: URLSearchParams): Promise<ConversationInfo> {
    const id = conversationIdOf(query.get('id') ?? undefined);
    const info = await this.need('conversation')(id);
    if (!info)
      throw new StudioHttpError(404, 'CONVERSATION_NOT_FOUND', `no conversation '${id}' (never started, or expired)`);
    return info;
  }

  /**
   * `GET /api/conversation/turn?run=`: the turn's run, from `shared` at its first recorded step
   * (`sharedAt`) through its committed steps' patches. The message it handled comes from its
   * agent's history, which lists ended turns only (a turn parked on an ask shows none yet).
   */
  async turn(query: URLSearchParams): Promise<ConversationTurnBody> {
    const runId = runIdOf(query.get('run') ?? undefined);
    const run = await this.need('get')(runId);
    if (!run) throw new StudioHttpError(404, 'RUN_NOT_FOUND', `no run '${runId}' (never started, or expired)`);
    const history = await this.need('history')(runId);
    const first = history[0]?.step ?? run.steps;
    let before: JsonObject;
    let patch: PatchOperation[];
    try {
      before = await this.need('sharedAt')(runId, first);
      patch = history.flatMap((record) => record.patch);
    } catch (error) {
      // No checkpoint to rebuild from (a run waiting on a fan-out): its `shared` as it is now.
      if ((error as { code?: unknown }).code !== 'INVALID_OPTION') throw error;
      before = run.shared;
      patch = [];
    }
    const after = jsonPatch.applyPatch(structuredClone(before), structuredClone(patch), false, true)
      .newDocument as JsonObject;
    const body: ConversationTurnBody = { runId, status: run.status, before, after, patch, steps: history.length };
    if (run.agent) {
      body.ref = run.agent.ref;
      body.turn = run.agent.turn;
      const message = await this.handled(run.agent.ref, runId);
      if (message) body.message = message;
    }
    return body;
  }

  /** `POST /api/conversation/fork` with `{ id, atMessage, body?, patch? }`. */
  async fork(input: unknown): Promise<ConversationFork> {
    const body = objectOf(input, 'the body');
    const id = conversationIdOf(body.id);
    const atMessage = messageIdOf(body.atMessage, 'atMessage');
    const patch = body.patch === undefined ? [] : jsonPatchOf(body.patch);
    return this.need('forkConversation')(id, {
      atMessage,
      ...(patch.length > 0 ? { patch } : {}),
      ...(body.body === undefined ? {} : { body: body.body as Json }),
    });
  }

  /** The message turn run `runId` of agent `ref` handled, when its history lists it. */
  private async handled(ref: string, runId: string): Promise<Message | undefined> {
    let history;
    try {
      history = await this.need('agentHistory')(ref);
    } catch {
      return undefined; // an engine without agent histories: the page shows the message's id alone
    }
    return history.find((turn) => turn.runId === runId)?.message;
  }
}

function summaryOf(info: ConversationInfo): ConversationSummary {
  const spent: Record<string, number> = {};
  for (const byKey of Object.values(info.spend))
    for (const [key, amount] of Object.entries(byKey)) spent[key] = (spent[key] ?? 0) + amount;
  return {
    id: info.id,
    status: info.status,
    turns: info.turns,
    participants: info.participants,
    messages: info.messages.length,
    waits: info.waits.length,
    spent,
    ...(info.budget === undefined ? {} : { budget: info.budget }),
    startedAt: info.startedAt,
    updatedAt: info.updatedAt,
    ...(info.error === undefined ? {} : { error: info.error }),
  };
}
