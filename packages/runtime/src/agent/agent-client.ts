import { nanoid } from 'nanoid';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Json, JsonObject } from '../json/json.js';
import type { CancelOptions, RunInfo, StepRecord } from '../kernel/engine.js';
import { forkConversation } from './fork-conversation.js';
import { isFinal, type RunStore } from '../kernel/run-store.js';
import { checkAddress, checkMessageBody, checkTimeout, type Message, type SendOptions } from '../mailbox/message.js';
import { checkTopic } from '../mailbox/topic.js';
import { checkWellFormed } from '../core/well-formed.js';
import type { AgentRuntime } from './agent-runtime.js';
import { AGENT_SEND_WINDOW, MAX_TURNS_KEPT, turnRunId, type AgentStore } from './agent-store.js';
import type {
  AgentInfo,
  AgentPage,
  AgentTurnInfo,
  AskOptions,
  ConversationFork,
  ConversationInfo,
  ConversationOptions,
  ForkConversationOptions,
  EngineSendOptions,
  ListAgentsOptions,
  PublishOptions,
  PublishResult,
} from './agent-types.js';
import type { ConversationStore } from './conversation-store.js';
import { checkSpendKey } from './spend.js';
import type { Clock } from '../kernel/clock.js';
import { checkAgentRef, firstState, parseAgentRef } from './define-agent.js';

export { AGENT_SEND_WINDOW };

/** Default of {@link AskOptions.timeoutMs}: 30 s. */
const DEFAULT_ASK_TIMEOUT_MS = 30_000;

/** What the agent client needs of its engine's run client. */
export interface AgentClientHost {
  send(address: string, body: Json, options?: SendOptions): Promise<string>;
  /** A message from outside any run, with a fresh id (RunClient.newMessage). */
  newMessage(body: Json): Message;
  /** Appends one message to many mailboxes, windowed (RunClient.deliver). */
  deliver(addresses: readonly string[], message: Message): Promise<void>;
  /** Wakes the runs of these wake ids (RunClient.promote). */
  promote(wakeIds: readonly string[]): Promise<void>;
  cancel(runId: string, options?: CancelOptions): Promise<void>;
  history(runId: string): Promise<StepRecord[]>;
  /** A run's record (RunClient.get). */
  get(runId: string): Promise<RunInfo | undefined>;
  /** `shared` at the start of a run's step (RunClient.sharedAt). */
  sharedAt(runId: string, step: number): Promise<JsonObject>;
}

/**
 * The client side of keyed agents: what `Engine` promises about them (send to an agent, ask,
 * agent, agents, query, deleteAgent, redeliver, agentHistory), written once for both engines.
 */
/** Windows of one send to many agents in flight at once (see AgentClient's toAgents). */
const SEND_WINDOWS_IN_FLIGHT = 4;

export class AgentClient {
  constructor(
    private readonly store: AgentStore,
    private readonly runs: RunStore,
    private readonly runtime: AgentRuntime,
    private readonly host: AgentClientHost,
    private readonly conversations: ConversationStore,
    private readonly clock: Clock,
  ) {}

  /**
   * Sends `body` to `address`; a message to an idle agent starts its turn (at once when this
   * process has the agent's type, else by a worker that has it, within a heartbeat).
   * @throws QueueflowError `MAILBOX_FULL` when the agent's inbox holds its type's `capacity`.
   */
  async send(address: string, body: Json, options: EngineSendOptions = {}): Promise<string> {
    const conversation = checkConversation('send', options.conversation);
    const parsed = parseAgentRef(address);
    const bound = parsed ? await this.runtime.inboxBound(address) : undefined;
    if (bound && bound.size >= bound.capacity)
      throw new QueueflowError(
        'MAILBOX_FULL',
        `send: the inbox of '${address}' holds ${bound.capacity} messages, its type's capacity: try again later`,
      );
    if (!parsed && !conversation)
      return this.host.send(address, body, options.replyTo === undefined ? {} : { replyTo: options.replyTo });
    checkAddress('send', address);
    checkMessageBody(body, `message body sent to '${address}'`);
    if (options.replyTo !== undefined) checkAddress('send', options.replyTo, 'replyTo');
    const message = this.host.newMessage(body);
    if (options.replyTo !== undefined) message.replyTo = options.replyTo;
    if (conversation) message.conversation = await this.begin(conversation, message.id);
    if (parsed) await this.toAgents([address], message);
    else await this.host.deliver([address], message);
    return message.id;
  }

  /**
   * Appends `message` to the inboxes of agents `refs` and starts the turns of those idle, one
   * transition per agent (AgentStore.send), AGENT_SEND_WINDOW agents at a time: the window's
   * inboxes in one round trip per partition, then its turns' first steps added in bulk.
   * SEND_WINDOWS_IN_FLIGHT windows go at once: each is still one short script, but their round
   * trips overlap. A process that dies part way has delivered to some windows; a turn it had not
   * started yet starts from the inbox left due (AgentRuntime.recover).
   *
   * A window that fails (Redis gone, say) stops the rest: no window starts after it, and
   * the first error is thrown once the windows already in flight have settled, so a caller that
   * sends again does not race the end of this send. The windows before it stay delivered.
   */
  private async toAgents(refs: readonly string[], message: Message): Promise<void> {
    const windows: string[][] = [];
    for (let first = 0; first < refs.length; first += AGENT_SEND_WINDOW)
      windows.push(refs.slice(first, first + AGENT_SEND_WINDOW));
    let next = 0;
    let failed: { error: unknown } | undefined; // the first window's failure
    const lane = async (): Promise<void> => {
      for (let at = next++; !failed && at < windows.length; at = next++) {
        try {
          await this.toWindow(windows[at]!, message);
        } catch (error) {
          failed ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SEND_WINDOWS_IN_FLIGHT, windows.length) }, lane));
    if (failed) throw failed.error;
  }

  /** One window of {@link AgentClient.toAgents}. */
  private async toWindow(window: readonly string[], message: Message): Promise<void> {
    const replies = await this.store.send(
      window.map((ref) => ({ ref, first: this.runtime.firstStateOf(ref), run: this.runtime.turnRunTemplate(ref) })),
      message,
      this.clock.now(),
    );
    await this.host.promote(replies.flatMap((reply) => reply.wakes));
    await this.runtime.started(
      replies.flatMap(({ activation }, i) => (activation ? [{ ref: window[i]!, activation }] : [])),
    );
  }

  /** Starts or continues conversation `options` (its id, else `messageId`); resolves its id. */
  private async begin(options: ConversationOptions, messageId: string): Promise<string> {
    const id = options.id ?? messageId;
    await this.conversations.begin(id, options.budget, this.clock.now());
    return id;
  }

  /** @see Engine.forkConversation */
  async forkConversation(id: string, options: ForkConversationOptions): Promise<ConversationFork> {
    checkConversationId('forkConversation', id);
    return forkConversation(
      {
        agents: this.store,
        runs: this.runs,
        conversations: this.conversations,
        get: (runId) => this.host.get(runId),
        sharedAt: (runId, step) => this.host.sharedAt(runId, step),
        stateVersion: (type) => this.runtime.definition(type)?.options.version ?? undefined,
        encodeState: (state) => this.runtime.encodeState(state),
        newMessage: (body) => this.host.newMessage(body),
        deliver: (addresses, message) => this.host.deliver(addresses, message),
        delivered: (addresses) => this.runtime.delivered(addresses),
        now: () => this.clock.now(),
      },
      id,
      options,
    );
  }

  /** @see Engine.conversation */
  async conversation(id: string): Promise<ConversationInfo | undefined> {
    checkConversationId('conversation', id);
    const stored = await this.conversations.load(id);
    if (!stored) return undefined;
    const waits: ConversationInfo['waits'] = [];
    for (const runId of stored.running) {
      const run = await this.runs.load(runId);
      const parked = run?.replay.parked;
      if (run?.status === 'waiting' && run.turn && parked)
        waits.push({ agent: run.turn.agent, runId, on: parked.address, since: run.updatedAt });
    }
    return {
      id: stored.id,
      status: stored.status,
      turns: stored.turns,
      participants: stored.participants,
      messages: stored.log,
      waits,
      spend: stored.spend ?? {},
      ...(stored.budget === undefined ? {} : { budget: stored.budget }),
      startedAt: stored.startedAt,
      updatedAt: stored.updatedAt,
      ...(stored.error === undefined ? {} : { error: stored.error }),
    };
  }

  /** @see Engine.conversations */
  async conversationIds(
    options: { limit?: number; cursor?: string } = {},
  ): Promise<{ ids: string[]; cursor?: string }> {
    const limit = pageLimit('conversations', options.limit);
    return this.conversations.list({ limit, ...(options.cursor === undefined ? {} : { cursor: options.cursor }) });
  }

  /**
   * Publishes `body` on `topic` to the subscribers this engine's agent types name (see
   * `AgentOptions.subscribe`), with one message id; a subscriber whose inbox is at its type's
   * capacity does not get it (`full`). The mailboxes are written in windows, and the turns of the
   * idle subscribers start. A process that dies part way has delivered to a prefix of them.
   * @throws QueueflowError `INVALID_OPTION` (a bad topic, a mapping's bad key), `NOT_JSON`, `PAYLOAD_TOO_LARGE`.
   */
  async publish(topic: string, body: Json, options: PublishOptions = {}): Promise<PublishResult> {
    const conversation = checkConversation('publish', options.conversation);
    checkTopic('publish', topic);
    checkMessageBody(body, `message body published on '${topic}'`);
    const subscribers = this.runtime.subscribers(topic, body);
    const full = new Set<string>();
    await Promise.all(
      subscribers.map(async (address) => {
        const bound = await this.runtime.inboxBound(address);
        if (bound && bound.size >= bound.capacity) full.add(address);
      }),
    );
    const delivered = subscribers.filter((address) => !full.has(address));
    const message: Message = { ...this.host.newMessage(body), topic };
    if (conversation) message.conversation = await this.begin(conversation, message.id);
    await this.toAgents(delivered, message);
    return { messageId: message.id, delivered, full: [...full] };
  }

  /**
   * Sends `body` to `address` with a fresh reply address and waits for the answer (a turn's
   * `this.reply(this.message, ...)`, a run's `reply`, or `engine.answer`).
   * @returns the answer, or `undefined` after `timeoutMs`.
   */
  async ask(address: string, body: Json, options: AskOptions = {}): Promise<Message | undefined> {
    const timeoutMs = checkTimeout('ask', options.timeoutMs) ?? DEFAULT_ASK_TIMEOUT_MS;
    const replyTo = `reply:${nanoid()}`;
    await this.send(address, body, {
      replyTo,
      ...(options.conversation === undefined ? {} : { conversation: options.conversation }),
    });
    return this.store.awaitMessage(replyTo, timeoutMs);
  }

  /**
   * A run was cancelled: when it was an agent's turn, its key records the end now (its message
   * to the dead letters) and goes on with its next message, if this process has the agent's type
   * (else a worker's heartbeat does, within seconds).
   */
  async cancelled(runId: string): Promise<void> {
    const run = await this.runs.load(runId);
    if (run?.turn) await this.runtime.runEnded(run);
  }

  /** @see Engine.agent */
  async agent(ref: string): Promise<AgentInfo | undefined> {
    checkAgentRef('agent', ref);
    const stored = await this.store.loadAgent(ref);
    if (!stored) return undefined;
    const capacity = this.runtime.definition(stored.type)?.options.capacity;
    return {
      type: stored.type,
      key: stored.key,
      state: await this.runtime.state(stored.state),
      turns: stored.turns,
      inbox: stored.inbox,
      ...(capacity === undefined ? {} : { capacity }),
      ...(stored.running === undefined ? {} : { running: stored.running }),
      failed: stored.failed,
      reminders: stored.reminders,
      ...(stored.lastTurnAt === undefined ? {} : { lastTurnAt: stored.lastTurnAt }),
    };
  }

  /** @see Engine.agents */
  async agents(options: ListAgentsOptions = {}): Promise<AgentPage> {
    const limit = pageLimit('agents', options.limit);
    if (options.cursor !== undefined) checkWellFormed('agents', 'cursor', options.cursor);
    const page = await this.store.listAgents({
      limit,
      ...(options.type === undefined ? {} : { type: options.type }),
      ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
    });
    return {
      agents: page.refs.map((ref) => ({ ref, ...parseAgentRef(ref)! })),
      ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
    };
  }

  /**
   * Runs query `name` of the agent's type on its last committed state (a key never activated: its
   * first state), without taking a turn.
   * @throws QueueflowError `INVALID_OPTION` for a type this engine lacks or a query it does not define.
   */
  async query(ref: string, name: string, arg?: Json): Promise<unknown> {
    const { type } = checkAgentRef('query', ref);
    const definition = this.runtime.definition(type);
    if (!definition)
      throw new QueueflowError(
        'INVALID_OPTION',
        `query: this engine has no agent type '${type}' (pass it in \`agents\`)`,
        {
          retryable: false,
        },
      );
    const query = definition.options.queries?.[name];
    if (typeof query !== 'function')
      throw new QueueflowError(
        'INVALID_OPTION',
        `query: agent type '${type}' has no query '${name}'; it has: ${Object.keys(definition.options.queries ?? {}).join(', ') || 'none'}`,
        { retryable: false },
      );
    const stored = await this.store.loadAgent(ref);
    const state = stored ? await this.runtime.state(stored.state) : firstState(definition);
    return query(state, arg);
  }

  /**
   * Deletes the key: its state, inbox, dead letters and turn history; a running turn is cancelled.
   * @returns whether there was such a key.
   */
  async deleteAgent(ref: string): Promise<boolean> {
    checkAgentRef('deleteAgent', ref);
    const deleted = await this.store.deleteAgent(ref);
    if (deleted === false) return false;
    if (deleted.running !== undefined) await this.host.cancel(deleted.running, { by: 'agent-deleted' }).catch(() => {});
    return true;
  }

  /**
   * Puts dead letter `messageId` back at the end of the key's inbox (its turn runs again).
   * @throws QueueflowError `MESSAGE_NOT_FOUND` when the key has no such dead letter.
   */
  async redeliver(ref: string, messageId: string): Promise<void> {
    checkAgentRef('redeliver', ref);
    checkWellFormed('redeliver', 'messageId', messageId);
    if (!(await this.store.redeliver(ref, messageId)))
      throw new QueueflowError('MESSAGE_NOT_FOUND', `redeliver: '${ref}' has no dead letter '${messageId}'`, {
        retryable: false,
      });
    await this.runtime.delivered([ref]);
  }

  /** @see Engine.agentHistory */
  async agentHistory(ref: string): Promise<AgentTurnInfo[]> {
    checkAgentRef('agentHistory', ref);
    const agent = await this.store.loadAgent(ref);
    if (!agent) return [];
    // A key's turns are the runs `<incarnation>t1` … `t<started>`: its history is theirs.
    const numbers = Array.from(
      { length: Math.min(agent.started, MAX_TURNS_KEPT) },
      (_, i) => agent.started - i,
    ).reverse();
    const runIds = numbers.map((turn) => turnRunId(agent.incarnation, turn));
    const runs = await this.runs.summaries(runIds);
    const turns = await Promise.all(
      runs.map(async (run, i): Promise<AgentTurnInfo | undefined> => {
        if (!run || !isFinal(run.status)) return undefined;
        const status = run.status as AgentTurnInfo['status'];
        const info: AgentTurnInfo = { turn: numbers[i]!, runId: run.id, status, at: run.finishedAt ?? run.updatedAt };
        if (run.turn) info.message = run.turn.message;
        if (status === 'completed') {
          const steps = await this.host.history(run.id).catch(() => undefined);
          if (steps) info.patch = steps.flatMap((step) => step.patch);
        }
        return info;
      }),
    );
    return turns.filter((turn): turn is AgentTurnInfo => turn !== undefined);
  }
}

/** Longest conversation id, in characters. */
const MAX_CONVERSATION_ID = 200;

/** @throws QueueflowError `INVALID_OPTION` for an id that is not 1 to 200 characters without whitespace. */
function checkConversationId(owner: string, id: unknown): string {
  if (typeof id !== 'string' || id === '' || id.length > MAX_CONVERSATION_ID || /\s/.test(id))
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected a conversation id of 1 to ${MAX_CONVERSATION_ID} characters without whitespace, got ${typeof id === 'string' ? JSON.stringify(id.slice(0, 80)) : typeof id}`,
      { retryable: false },
    );
  return checkWellFormed(owner, 'conversation.id', id);
}

/**
 * The `conversation` option, checked.
 * @throws QueueflowError `INVALID_OPTION` naming the bad id or limit.
 */
function checkConversation(owner: string, options: unknown): ConversationOptions | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null)
    throw new QueueflowError('INVALID_OPTION', `${owner}: expected \`conversation\` to be an object { id?, budget? }`, {
      retryable: false,
    });
  const { id, budget } = options as ConversationOptions;
  if (id !== undefined) checkConversationId(owner, id);
  if (budget !== undefined) {
    if (typeof budget !== 'object' || budget === null)
      throw new QueueflowError('INVALID_OPTION', `${owner}: expected \`conversation.budget\` to be an object`, {
        retryable: false,
      });
    for (const [limit, value] of Object.entries(budget)) {
      if (value === undefined) continue; // a limit left out
      const integer = limit === 'turns' || limit === 'messages';
      if (!['turns', 'messages', 'wallMs', 'cost'].includes(limit))
        throw new QueueflowError(
          'INVALID_OPTION',
          `${owner}: unknown limit \`conversation.budget.${limit}\`; known: turns, messages, wallMs, cost`,
          { retryable: false },
        );
      if (limit === 'cost') {
        checkCost(owner, value);
        continue;
      }
      if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value) || (integer && !Number.isInteger(value)))
        throw new QueueflowError(
          'INVALID_OPTION',
          `${owner}: expected \`conversation.budget.${limit}\` to be a positive ${integer ? 'integer' : 'number of milliseconds'}, got ${JSON.stringify(value)}`,
          { retryable: false },
        );
    }
  }
  return options as ConversationOptions;
}

/**
 * A budget's `cost`: `{ key, max }`, a spend key (as `this.spend` takes) and a positive amount.
 * @throws QueueflowError `INVALID_OPTION` naming the bad value.
 */
function checkCost(owner: string, cost: unknown): void {
  const { key, max } = (cost ?? {}) as { key?: unknown; max?: unknown };
  const extra =
    typeof cost === 'object' && cost !== null ? Object.keys(cost).filter((k) => k !== 'key' && k !== 'max') : [];
  if (typeof cost !== 'object' || cost === null || extra.length > 0)
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected \`conversation.budget.cost\` to be { key, max }, got ${JSON.stringify(cost)}`,
      { retryable: false },
    );
  checkSpendKey(owner, 'conversation.budget.cost.key', key);
  if (typeof max !== 'number' || !(max > 0) || !Number.isFinite(max))
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected \`conversation.budget.cost.max\` to be a positive finite number, got ${typeof max === 'string' ? JSON.stringify(max) : String(max)}`,
      { retryable: false },
    );
}

/**
 * The `limit` of a page (`agents`, `conversations`): 100 when absent.
 * @throws QueueflowError `INVALID_OPTION` for one that is not an integer from 1.
 */
function pageLimit(owner: string, limit: number | undefined): number {
  if (limit === undefined) return 100;
  if (!Number.isInteger(limit) || limit < 1)
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected \`limit\` to be an integer from 1, got ${String(limit)}`,
      {
        retryable: false,
      },
    );
  return limit;
}
