import type { AgentInfo, Engine } from '@queueflow/runtime';
import type { DeskMail } from './desk-mail.js';
import {
  list,
  moderator,
  REVIEWER_ADDRESS,
  scriptedReviewer,
  sender,
  thread,
  triage,
  type ListState,
  type ModeratorState,
  type SenderState,
  type ThreadState,
} from './desk-agents.js';
import { agentKeyOf } from './agent-key.js';
import { deskMessages } from './desk-messages.js';

export interface DeskOptions {
  /** Mails triaged at once (each an ask to its triage agent). */
  inFlight: number;
  /** Most turns a mail's conversation may take (its triage, thread, sender, list and moderator turns). */
  turnBudget: number;
  /** Told after each mail is triaged. */
  onProgress?: (triaged: number, total: number) => void;
  /** How often the end is looked for once every mail is triaged, in ms. @defaultValue 200 */
  pollMs?: number;
  /** How long the agents may count nothing new before the desk gives up, in ms. @defaultValue 120000 */
  stallMs?: number;
  /**
   * Who answers the moderator at `desk.reviewer`: the scripted reviewer flow, started here, or a
   * person (in the studio's ask inbox; a question nobody answers within 60 s is let go).
   * @defaultValue 'scripted'
   */
  reviewer?: 'scripted' | 'person';
  /**
   * The engine's partitions (RedisEngine `deploymentPartitions`): with more than one (a Redis
   * Cluster), the result counts the messages between agents of different partitions.
   */
  partitions?: { count: number; indexOfAddress(address: string): number };
  /**
   * Thread summaries from the model (`--llm`): each mail goes out with `llm: true`, and its
   * thread's turn asks the model of the `OPENAI_*` settings of the process that runs it, under
   * the `llm` budget. @defaultValue false (the extractive summary)
   */
  llmSummary?: boolean;
}

/** An agent's key and last committed state. */
export interface KeyedState<S> {
  key: string;
  state: S;
}

/** What a desk run leaves: every agent's final state, and its figures. */
export interface DeskResult {
  mails: number;
  ham: number;
  spam: number;
  /** Mails the triage skipped (the parser refused them), with why. */
  skipped: { docId: string; reason: string }[];
  /** From the first send to the last agent idle (a list's last digest included), in seconds. */
  seconds: number;
  /** From the first send to the last triage's reply, in seconds. */
  triageSeconds: number;
  /** Per mail, from its send to its triage's reply, in ms (sorted). */
  triageMs: number[];
  threads: KeyedState<ThreadState>[];
  senders: KeyedState<SenderState>[];
  lists: KeyedState<ListState>[];
  moderator: ModeratorState | undefined;
  /** Committed turns per agent type. */
  turns: Record<string, number>;
  /** The largest state, as JSON bytes, and whose. */
  largestState: { ref: string; bytes: number };
  /**
   * With partitions (a cluster): the messages the agents sent each other (see `deskMessages`),
   * and those whose sender lives in another partition than its receiver (an agent lives in the
   * partition of its address).
   */
  crossPartition?: { partitions: number; messages: number; crossing: number };
}

/**
 * Replays `mails` (in date order) into the desk's agents on `engine`, which has them (and the
 * scripted reviewer flow): each mail is sent, as a conversation of its own, to its triage agent,
 * at most `inFlight` at once. Once every mail is triaged, waits until each thread, sender and
 * list has counted every mail meant for it, the lists have written their digests and the
 * moderator is idle; then reads every agent's final state.
 */
export async function runDesk(engine: Engine, mails: readonly DeskMail[], options: DeskOptions): Promise<DeskResult> {
  await checkFreshEngine(engine);
  const started = performance.now();
  const reviewer = options.reviewer === 'person' ? undefined : await engine.start(scriptedReviewer, { answered: 0 });
  const triageMs: number[] = [];
  const skipped: DeskResult['skipped'] = [];
  const labels = new Map<string, 'ham' | 'spam'>();
  let next = 0;
  const triageNext = async (): Promise<void> => {
    while (next < mails.length) {
      const mail = mails[next++]!;
      const sent = performance.now();
      const asked = options.llmSummary ? { ...mail, llm: true as const } : mail;
      const reply = await engine.ask(triage.ref(agentKeyOf(mail.docId)), asked as never, {
        timeoutMs: 300_000,
        conversation: { id: mail.docId, budget: { turns: options.turnBudget } },
      });
      triageMs.push(performance.now() - sent);
      const body = reply?.body as { label?: 'ham' | 'spam'; skipped?: string } | undefined;
      if (body?.label) labels.set(mail.docId, body.label);
      else skipped.push({ docId: mail.docId, reason: body?.skipped ?? 'no reply from its triage within 300 s' });
      options.onProgress?.(triageMs.length, mails.length);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.inFlight, mails.length) }, triageNext));
  const triageSeconds = (performance.now() - started) / 1000;

  const triaged = mails.filter((mail) => labels.has(mail.docId));
  const listed = triaged.filter((mail) => mail.list !== undefined && labels.get(mail.docId) === 'ham').length;
  let states: DeskStates | undefined;
  // Threads and senders once their counts are complete: not read again until a last full read (on
  // a RedisEngine each read is a round trip per agent, hundreds) while the lists wait to flush.
  const settled = new Set<AgentGroup>();
  let progress = '';
  let progressAt = performance.now();
  for (;;) {
    states = await readStates(engine, states, settled);
    const counted = (infos: AgentInfo[], count: (state: never) => number): number =>
      infos.reduce((sum, info) => sum + count(info.state as never), 0);
    const figures = {
      threads: counted(states.threads, (state: ThreadState) => state.count),
      senders: counted(states.senders, (state: SenderState) => state.ham + state.spam),
      lists: counted(states.lists, (state: ListState) => state.count),
      pending: counted(states.lists, (state: ListState) => state.pending.length),
      moderator: (states.moderator?.inbox ?? 0) + (states.moderator?.running === undefined ? 0 : 1),
    };
    const expected = { threads: triaged.length, senders: triaged.length, lists: listed, pending: 0, moderator: 0 };
    if (JSON.stringify(figures) === JSON.stringify(expected)) {
      if (settled.size === 0) break;
      settled.clear(); // every agent's last state, read again at the end
      continue;
    }
    if (figures.threads > expected.threads || figures.senders > expected.senders || figures.lists > expected.lists)
      throw new Error(
        `the desk's agents counted more mails than were triaged: ${JSON.stringify(figures)}, expected ` +
          `${JSON.stringify(expected)} (a triage that answered after its timeout, or mails of another desk run)`,
      );
    if (JSON.stringify(figures) !== progress) [progress, progressAt] = [JSON.stringify(figures), performance.now()];
    else if (performance.now() - progressAt > (options.stallMs ?? 120_000))
      throw new Error(
        `the desk's agents counted nothing new for ${Math.round((options.stallMs ?? 120_000) / 1000)} s: ` +
          `they stand at ${progress}, expected ${JSON.stringify(expected)}`,
      );
    if (figures.threads === expected.threads) settled.add('threads');
    if (figures.senders === expected.senders) settled.add('senders');
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
  if (reviewer) {
    await engine.send(REVIEWER_ADDRESS, { stop: true });
    await reviewer.result();
  }
  const seconds = (performance.now() - started) / 1000;

  const all = [...states.threads, ...states.senders, ...states.lists, ...(states.moderator ? [states.moderator] : [])];
  const turns: Record<string, number> = {};
  let largestState = { ref: '', bytes: 0 };
  for (const info of all) {
    turns[info.type] = (turns[info.type] ?? 0) + info.turns;
    const bytes = Buffer.byteLength(JSON.stringify(info.state));
    if (bytes > largestState.bytes) largestState = { ref: `agent:${info.type}/${info.key}`, bytes };
  }
  turns[triage.type] = triageMs.length;
  const keyed = <S>(infos: AgentInfo[]): KeyedState<S>[] =>
    infos.map((info) => ({ key: info.key, state: info.state as unknown as S }));
  const spam = [...labels.values()].filter((label) => label === 'spam').length;
  const moderatorState = states.moderator?.state as unknown as ModeratorState | undefined;
  const partitions = options.partitions;
  let crossPartition: DeskResult['crossPartition'];
  if (partitions && partitions.count > 1) {
    const messages = deskMessages(mails, labels, moderatorState?.verdicts ?? []);
    const crossing = messages.filter(
      ({ from, to }) => partitions.indexOfAddress(from) !== partitions.indexOfAddress(to),
    ).length;
    crossPartition = { partitions: partitions.count, messages: messages.length, crossing };
  }
  return {
    mails: mails.length,
    ham: labels.size - spam,
    spam,
    skipped,
    seconds,
    triageSeconds,
    triageMs: triageMs.sort((a, b) => a - b),
    threads: keyed<ThreadState>(states.threads),
    senders: keyed<SenderState>(states.senders),
    lists: keyed<ListState>(states.lists),
    moderator: moderatorState,
    turns,
    largestState,
    ...(crossPartition ? { crossPartition } : {}),
  };
}

/**
 * The desk knows its end from the agents' counts: the agents (or queued mails) of an earlier desk
 * run, finished or interrupted, would be counted too.
 * @throws Error naming one of them and how to start afresh.
 */
export async function checkFreshEngine(engine: Engine): Promise<void> {
  const earlier = await engine.agents({ limit: 1 });
  if (earlier.agents.length > 0)
    throw new Error(
      `this engine already holds agents of an earlier desk run, finished or interrupted (${earlier.agents[0]!.ref}...): ` +
        'run on a fresh --prefix, or empty this one with `npx queueflow purge --yes` (with its --redis and --prefix)',
    );
}

/** Every thread, sender and list agent, and the moderator, as `engine.agent` shows them. */
interface DeskStates {
  threads: AgentInfo[];
  senders: AgentInfo[];
  lists: AgentInfo[];
  moderator: AgentInfo | undefined;
}

type AgentGroup = 'threads' | 'senders';

/** The desk's agents now; those of the `settled` groups as in `previous` (not read again). */
async function readStates(
  engine: Engine,
  previous: DeskStates | undefined,
  settled: ReadonlySet<AgentGroup>,
): Promise<DeskStates> {
  const group = (name: AgentGroup, type: string): Promise<AgentInfo[]> =>
    previous && settled.has(name) ? Promise.resolve(previous[name]) : agentsOf(engine, type);
  const [threads, senders, lists, desk] = await Promise.all([
    group('threads', thread.type),
    group('senders', sender.type),
    agentsOf(engine, list.type),
    engine.agent(moderator.ref('desk')),
  ]);
  return { threads, senders, lists, moderator: desk };
}

/** Every agent of `type`, in key order. */
async function agentsOf(engine: Engine, type: string): Promise<AgentInfo[]> {
  const infos: AgentInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await engine.agents({ type, limit: 500, ...(cursor === undefined ? {} : { cursor }) });
    const found = await Promise.all(page.agents.map((listing) => engine.agent(listing.ref)));
    for (const info of found) if (info) infos.push(info);
    cursor = page.cursor;
  } while (cursor !== undefined);
  return infos;
}
