import {
  MAX_DEAD_LETTERS,
  turnRunId,
  type AgentActivation,
  type AgentStore,
  type DeadLetter,
  type FirstState,
  type StoredAgent,
  type TurnEnd,
} from '../agent/agent-store.js';
import { parseAgentRef } from '../agent/define-agent.js';
import { fireReminder, reminderInfo, type ReminderChange, type StoredReminder } from '../agent/reminders.js';
import type { ValueClaim } from '../kernel/claim-check.js';
import type { Clock } from '../kernel/clock.js';
import type { Message } from '../mailbox/message.js';

/** What the agent store needs of the run store's mailboxes: the inboxes live there. */
export interface InboxPort {
  peekMessage(address: string): Message | undefined;
  shiftMessage(address: string, messageId: string): boolean;
  mailboxSize(address: string): Promise<number>;
  send(address: string, message: Message): Promise<{ wakes: string[] }>;
  dropMailbox(address: string): void;
  onArrival(address: string, listener: () => void): () => void;
}

/**
 * What the agent store needs of the run store's values (the claim check): a key's state keeps the
 * values it references as a run's checkpoint does (MemoryRunStore.keepValues, dropValues).
 */
export interface ValuePort {
  /** Claims `claim`'s values for `owner`; resolves the hashes it claimed. */
  keepValues(owner: string, claim: ValueClaim | undefined): string[];
  /** `owner` lets `hashes` go. */
  dropValues(owner: string, hashes: Iterable<string>): void;
}

interface MemoryAgent {
  type: string;
  key: string;
  state: string;
  version: number;
  turns: number;
  /** Turns started (the last turn's number). */
  seq: number;
  incarnation: string;
  running?: string;
  runningMessage?: string;
  failed: DeadLetter[];
  lastTurnAt?: number;
  /** Deleted at this time (epoch ms) unless a turn starts first (idleTtlMs). */
  expiresAt?: number;
  /** Hashes of the values `state` references, claimed for the key (by its address). */
  values: string[];
}

/**
 * The agent store of LocalEngine: each transition is one synchronous change of maps, so none can
 * be seen half done. Nothing here outlives the process (as the engine's runs do not).
 */
export class MemoryAgentStore implements AgentStore {
  private readonly agents = new Map<string, MemoryAgent>();
  /** Reminders by agent, then by name. */
  private readonly reminders = new Map<string, Map<string, StoredReminder>>();

  constructor(
    private readonly inboxes: InboxPort,
    private readonly clock: Clock,
    /** Where the values of large states are kept (the run store's). */
    private readonly values: ValuePort,
  ) {}

  async activateAgent(ref: string, first: FirstState): Promise<AgentActivation | undefined> {
    return this.activate(ref, first);
  }

  async send(
    agents: readonly { ref: string; first: FirstState | undefined }[],
    message: Message,
  ): Promise<{ wakes: string[]; activation?: AgentActivation }[]> {
    const replies: { wakes: string[]; activation?: AgentActivation }[] = [];
    for (const { ref, first } of agents) {
      const { wakes } = await this.inboxes.send(ref, message);
      // Without the type, a key never activated stays so (activate); one known is left to whoever
      // has the type, as a send to it would leave it.
      const activation = first ? this.activate(ref, first) : undefined;
      replies.push(activation ? { wakes, activation } : { wakes });
    }
    return replies;
  }

  private activate(ref: string, first: FirstState | undefined): AgentActivation | undefined {
    let agent = this.live(ref);
    if (agent?.running !== undefined) return undefined;
    const message = this.inboxes.peekMessage(ref);
    if (!message) return undefined;
    if (!agent) {
      if (!first) return undefined;
      agent = this.create(ref, first);
    }
    delete agent.expiresAt;
    agent.seq++;
    agent.running = turnRunId(agent.incarnation, agent.seq);
    agent.runningMessage = message.id;
    return { runId: agent.running, turn: agent.seq, state: agent.state, version: agent.version, message };
  }

  async endTurn(ref: string, end: TurnEnd): Promise<{ result: 'ended' | 'stale'; next?: AgentActivation }> {
    return this.endTurnNow(ref, end);
  }

  /** {@link MemoryAgentStore.endTurn}, synchronous: for a run store's commit (MemoryRunStore.endTurns). */
  endTurnNow(ref: string, end: TurnEnd): { result: 'ended' | 'stale'; next?: AgentActivation } {
    const agent = this.live(ref);
    if (!agent || agent.running !== end.runId) return { result: 'stale' };
    if (end.status === 'completed') {
      if (end.state !== undefined) {
        // The new state's claims first: a value both states reference is never let go.
        const before = agent.values;
        agent.values = this.values.keepValues(ref, end.values);
        this.values.dropValues(
          ref,
          before.filter((hash) => !agent.values.includes(hash)),
        );
        agent.state = end.state;
      }
      agent.version = end.version ?? agent.version;
      agent.turns++;
      this.inboxes.shiftMessage(ref, end.messageId);
    } else {
      const message = this.inboxes.peekMessage(ref);
      if (message?.id === end.messageId && this.inboxes.shiftMessage(ref, end.messageId)) {
        agent.failed.push({ message, error: end.error!, runId: end.runId, at: end.now });
        if (agent.failed.length > MAX_DEAD_LETTERS) agent.failed.shift();
      }
    }
    agent.lastTurnAt = end.now;
    delete agent.running;
    delete agent.runningMessage;
    const next = this.activate(ref, undefined);
    if (!next && end.idleTtlMs !== undefined && !this.reminders.has(ref)) agent.expiresAt = end.now + end.idleTtlMs;
    return next ? { result: 'ended', next } : { result: 'ended' };
  }

  async loadAgent(ref: string): Promise<StoredAgent | undefined> {
    const agent = this.live(ref);
    if (!agent) return undefined;
    const next = this.inboxes.peekMessage(ref);
    return {
      ...(next === undefined ? {} : { next }),
      type: agent.type,
      key: agent.key,
      state: agent.state,
      version: agent.version,
      turns: agent.turns,
      started: agent.seq,
      incarnation: agent.incarnation,
      ...(agent.running === undefined ? {} : { running: agent.running }),
      failed: agent.failed.slice(),
      reminders: [...(this.reminders.get(ref) ?? new Map<string, StoredReminder>())]
        .map(([name, reminder]) => reminderInfo(name, reminder))
        .sort((a, b) => a.due - b.due),
      inbox: await this.inboxes.mailboxSize(ref),
      ...(agent.lastTurnAt === undefined ? {} : { lastTurnAt: agent.lastTurnAt }),
    };
  }

  async listAgents(options: {
    type?: string;
    limit: number;
    cursor?: string;
  }): Promise<{ refs: string[]; cursor?: string }> {
    const refs = [...this.agents.keys()]
      .filter((ref) => this.live(ref) !== undefined)
      .filter((ref) => options.type === undefined || this.agents.get(ref)!.type === options.type)
      .filter((ref) => options.cursor === undefined || ref > options.cursor)
      .sort();
    const page = refs.slice(0, options.limit);
    return refs.length > options.limit ? { refs: page, cursor: page.at(-1)! } : { refs: page };
  }

  async deleteAgent(ref: string): Promise<{ running?: string } | false> {
    const agent = this.live(ref);
    this.inboxes.dropMailbox(ref);
    this.reminders.delete(ref);
    if (!agent) return false;
    this.agents.delete(ref);
    this.values.dropValues(ref, agent.values);
    return agent.running === undefined ? {} : { running: agent.running };
  }

  async seedAgent(ref: string, first: FirstState): Promise<boolean> {
    if (this.live(ref)) return false;
    this.create(ref, first);
    return true;
  }

  /** Makes key `ref` with its first state, idle, no turn taken. */
  private create(ref: string, first: FirstState): MemoryAgent {
    const { type, key } = parseAgentRef(ref)!;
    const agent: MemoryAgent = {
      type,
      key,
      state: first.state,
      version: first.version,
      turns: 0,
      seq: 0,
      incarnation: first.incarnation,
      failed: [],
      values: this.values.keepValues(ref, first.values),
    };
    this.agents.set(ref, agent);
    return agent;
  }

  async redeliver(ref: string, messageId: string): Promise<boolean> {
    const agent = this.live(ref);
    const index = agent?.failed.findIndex((letter) => letter.message.id === messageId) ?? -1;
    if (!agent || index === -1) return false;
    const [letter] = agent.failed.splice(index, 1);
    await this.inboxes.send(ref, letter!.message);
    return true;
  }

  async changeReminders(ref: string, changes: ReminderChange[]): Promise<void> {
    const byName = this.reminders.get(ref) ?? new Map<string, StoredReminder>();
    for (const change of changes) {
      if ('cancel' in change) byName.delete(change.name);
      else byName.set(change.name, change.reminder);
    }
    if (byName.size > 0) this.reminders.set(ref, byName);
    else this.reminders.delete(ref);
  }

  async fireReminders(now: number, limit: number): Promise<{ delivered: string[]; next?: number }> {
    const due = [...this.reminders]
      .flatMap(([ref, byName]) => [...byName].map(([name, reminder]) => ({ ref, name, reminder })))
      .filter(({ reminder }) => reminder.due <= now)
      .sort((a, b) => a.reminder.due - b.reminder.due)
      .slice(0, limit);
    const delivered: string[] = [];
    for (const { ref, name, reminder } of due) {
      const { message, next } = fireReminder(name, reminder, now);
      if (message) {
        await this.inboxes.send(ref, message);
        delivered.push(ref);
      }
      if (next === undefined) await this.changeReminders(ref, [{ name, cancel: true }]);
      else reminder.due = next;
    }
    let next: number | undefined;
    for (const byName of this.reminders.values())
      for (const reminder of byName.values()) next = Math.min(next ?? Infinity, reminder.due);
    return next === undefined ? { delivered } : { delivered, next };
  }

  // In one process no transition is left half done by a crash: nothing is ever due.
  async turnsDue(): Promise<{ ref: string; runId: string }[]> {
    return [];
  }

  async inboxesDue(): Promise<string[]> {
    return [];
  }

  async awaitMessage(address: string, timeoutMs: number): Promise<Message | undefined> {
    const take = (): Message | undefined => {
      const head = this.inboxes.peekMessage(address);
      if (head) this.inboxes.shiftMessage(address, head.id);
      return head;
    };
    const now = take();
    if (now) return now;
    return new Promise((resolve) => {
      const stop = this.inboxes.onArrival(address, () => {
        const message = take();
        if (!message) return;
        clearTimeout(timer);
        stop();
        resolve(message);
      });
      // Real time, as `result`'s timeout: a test's fake clock does not end a wait.
      const timer = setTimeout(() => {
        stop();
        resolve(undefined);
      }, timeoutMs);
    });
  }

  /** The key, unless its idle time ran out (it is deleted then, with its inbox). */
  private live(ref: string): MemoryAgent | undefined {
    const agent = this.agents.get(ref);
    if (agent?.expiresAt !== undefined && agent.expiresAt <= this.clock.now()) {
      this.agents.delete(ref);
      this.values.dropValues(ref, agent.values);
      return undefined;
    }
    return agent;
  }
}
