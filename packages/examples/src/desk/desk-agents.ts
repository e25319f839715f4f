/**
 * The mail desk's team of keyed agents (README "The mail desk"). Each mail is a conversation:
 * the desk sends it to a `triage` agent of its own, whose turn parses and classifies it and
 * publishes it on `mail.classified`; the `thread`, `sender` and `list` agents it concerns take it
 * from there, and a `sender` with a ham dated before its first spam alerts the `moderator`, who
 * asks a reviewer (a person, or the scripted one) through the mailbox `desk.reviewer`.
 *
 * What a thread, sender or list keeps does not depend on the order its mails came in (sets kept
 * sorted, first and last mails by date): the same corpus gives the same states embedded or on any
 * number of workers. So do the moderator's alerts (by the mails' dates: once per sender, unless
 * two spams of one sender arrive out of date order). A list's digests depend on timing (see `list`).
 */
import { defineAgent, defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import { parseEmail } from '../utils/email-parser.js';
import { readDocumentBytes } from '../utils/document-reader.js';
import { getSpamClassifier } from '../utils/spam-classifier.js';
import { analyseText } from '../utils/text-analysis.js';
import { cleanText } from '../utils/text-cleaner.js';
import { llmLimitsFromEnv } from '../llm/llm-limits.js';
import { modelCallError } from '../llm/retry-after.js';
import { llmConfigFromEnv } from '../utils/llm-client.js';
import { llmSummary } from '../utils/llm-summary.js';
import { earlier, later, MAIL_CLASSIFIED, withMember, type ClassifiedMail, type MailPoint } from './classified-mail.js';
import { MAX_MAIL_BYTES, type DeskMail } from './desk-mail.js';

/** Where the moderator asks a person (or the scripted reviewer) about a sender. */
export const REVIEWER_ADDRESS = 'desk.reviewer';

/** Mails a list's digest holds before it is written (the rest: at the list's `flush` reminder). */
const DIGEST_SIZE = 10;

/** How long after its first pending mail a list writes its digest anyway, in ms (wall clock). */
const DIGEST_AFTER_MS = 2000;

// --- triage: one turn per mail ------------------------------------------------------------------

class Triage extends Node<{ label?: string }, Record<string, never>> {
  override async prep(): Promise<DeskMail> {
    return this.message!.body as unknown as DeskMail;
  }
  override async exec(mail: DeskMail): Promise<ClassifiedMail> {
    const email = await parseEmail(
      await readDocumentBytes({ source: 'spam-assassin', path: mail.path }, MAX_MAIL_BYTES),
    );
    const text = cleanText({ kind: 'email', plainText: email.plainText, html: email.html });
    const prediction = (await getSpamClassifier()).classify({
      subject: email.subject,
      text,
      senderDomain: email.senderDomain,
    });
    const { summary } = analyseText(text, { maxChars: 4000, keywordCount: 0, summarySentences: 1 });
    return { ...mail, label: prediction.label, summary };
  }
  /** A mail the parser refuses (truncated, malformed) is skipped, and said so: not a failed turn. */
  override execFallback(_mail: DeskMail, error: Error): { skipped: string } {
    return { skipped: error.message };
  }
  override async post(
    state: { label?: string },
    _mail: DeskMail,
    outcome: ClassifiedMail | { skipped: string },
  ): Promise<undefined> {
    const message = this.message!;
    if ('skipped' in outcome) {
      if (message.replyTo) await this.reply(message, outcome);
      return undefined;
    }
    state.label = outcome.label;
    await this.publish(MAIL_CLASSIFIED, outcome as never);
    if (message.replyTo) await this.reply(message, { label: outcome.label });
    return undefined;
  }
}

/** Keyed by the mail's document id; forgotten a second after its one turn. */
export const triage = defineAgent('desk-triage', {
  state: () => ({}) as { label?: string },
  turn: () => new Triage({ name: 'classify', maxRetries: 2, wait: 0.1 }),
  idleTtlMs: 1000,
});

// --- thread: who wrote in it, how much, first and last mail ----------------------------------------

export interface ThreadState {
  count: number;
  participants: string[];
  first: MailPoint | null;
  last: MailPoint | null;
  /**
   * Its subject (its first mail's) and summary: the first mail's sentence, then the latest's; or,
   * when the desk runs with `--llm` and the thread has two mails or more, the model's summary of them.
   */
  subject: string;
  summary: string;
  /** Only with `--llm`: whether `summary` is the model's (`llm`) or the sentences (`extractive`). */
  summarySource?: 'extractive' | 'llm';
}

/** What a thread's turn asks the model: its subject and its first and latest mails' sentences. */
interface ThreadPrompt {
  subject: string | null;
  text: string;
}

/**
 * The model's prompt for a thread that `mail` joins, or `null` when the turn keeps the extractive
 * summary: the desk runs without `--llm` (or this process has no `OPENAI_*` settings), the thread
 * has one mail, `mail` is neither its first nor its latest (the summary stays as it is), or
 * neither has a sentence. A pure function of the state and the mail, so the final summary is the
 * model's answer for the final first and latest mails, whatever order the mails came in.
 */
function threadPrompt(state: ThreadState, mail: ClassifiedMail): ThreadPrompt | null {
  if (mail.llm !== true || state.count < 1 || llmConfigFromEnv() === null) return null;
  const point: MailPoint = { at: mail.at, docId: mail.docId, from: mail.from, summary: mail.summary };
  const first = earlier(state.first, point);
  const last = later(state.last, point);
  if (first !== point && last !== point) return null;
  const line = (label: string, mail: MailPoint): string =>
    `${label} (${new Date(mail.at).toISOString().slice(0, 10)}, ${mail.from}): ${mail.summary ?? '(no text)'}`;
  if (!first.summary && !last.summary) return null;
  return {
    subject: first === point ? mail.subject : state.subject,
    text: [line('First mail', first), line(`Latest mail, of ${state.count + 1}`, last)].join('\n'),
  };
}

/**
 * A thread's turn. With `--llm` (the mail's `llm`), `exec` asks the model (the official `openai`
 * client, as the document pipeline's summarise node) for the thread's summary, under the `llm`
 * budget's limits; after its tries, or without a model, the extractive summary stays.
 */
class FollowThread extends Node<ThreadState> {
  override prep(state: ThreadState): ThreadPrompt | null {
    return threadPrompt(state, this.message!.body as unknown as ClassifiedMail);
  }
  override async exec(prompt: ThreadPrompt | null): Promise<string | null> {
    const config = llmConfigFromEnv();
    if (prompt === null || config === null) return null;
    try {
      return await llmSummary(config, prompt, this.signal);
    } catch (error) {
      // A 429: wait as the provider says, using no try, and hold the budget back for everyone.
      throw modelCallError(error);
    }
  }
  override execFallback(): null {
    return null;
  }
  override post(state: ThreadState, _prompt: ThreadPrompt | null, modelSummary: string | null): undefined {
    const mail = this.message!.body as unknown as ClassifiedMail;
    const point: MailPoint = { at: mail.at, docId: mail.docId, from: mail.from, summary: mail.summary };
    const kept = { summary: state.summary, source: state.summarySource };
    state.count += 1;
    state.participants = withMember(state.participants, mail.from);
    state.first = earlier(state.first, point);
    state.last = later(state.last, point);
    if (state.first === point) state.subject = mail.subject;
    const sentences = [state.first.summary, state.last === state.first ? null : state.last.summary];
    state.summary = sentences.filter((sentence) => sentence).join(' … ');
    if (mail.llm === true) {
      const changed = state.first === point || state.last === point;
      if (modelSummary !== null) [state.summary, state.summarySource] = [modelSummary, 'llm'];
      else if (!changed && kept.source === 'llm') [state.summary, state.summarySource] = [kept.summary, 'llm'];
      else state.summarySource = 'extractive';
    }
    return undefined;
  }
}

export const thread = defineAgent('desk-thread', {
  state: (): ThreadState => ({ count: 0, participants: [], first: null, last: null, subject: '', summary: '' }),
  turn: () => {
    // The `llm` budget of QF_LLM_QUOTA, shared with the document pipeline's summarise node; only
    // the tries that call the model draw from it (`when`): without `--llm` no turn waits for it.
    const limits = llmLimitsFromEnv()?.map((limit) => ({
      ...limit,
      when: (prompt: ThreadPrompt | null) => prompt !== null,
    }));
    return new FollowThread({
      name: 'follow',
      // As the document pipeline's summarise node: its tries, backoff and timeout for the model.
      maxRetries: 3,
      wait: 1,
      backoff: { type: 'exponential', jitter: 0.2, maxDelayMs: 10_000 },
      timeoutMs: 30_000,
      ...(limits ? { limits } : {}),
    });
  },
  subscribe: { [MAIL_CLASSIFIED]: (body) => (body as unknown as ClassifiedMail).thread },
});

// --- sender: a reputation ---------------------------------------------------------------------

export interface SenderState {
  ham: number;
  spam: number;
  lists: string[];
  first: number | null;
  last: number | null;
  /** The dates of its earliest hams, at most {@link HAMS_KEPT}, ascending. */
  earliestHams: number[];
  /** Its earliest spam (by date, then id), which the moderator hears about. */
  firstSpam: { at: number; docId: string; subject: string } | null;
}

/** A sender's reputation, from 0 (all spam) to 1 (all ham): Laplace-smoothed share of ham. */
export function reputationOf(state: Pick<SenderState, 'ham' | 'spam'>): number {
  return (state.ham + 1) / (state.ham + state.spam + 2);
}

/**
 * Hams a sender needs, dated before its first spam, for that spam to be news to the moderator:
 * one, a reputation of 2/3 (see {@link reputationOf}) and no spam before. With two, no sender of
 * the default sample qualifies (the classifier's spam among ham senders is rare: 6 senders on
 * `--all` with two hams first, 10 with one; the sample's one is gkm@petting-zoo.net, whose
 * mail of 18 August 2002 comes 6 minutes after a ham of theirs).
 */
const TRUSTED_AFTER = 1;

/** Earliest hams a sender keeps the dates of: enough for the scripted reviewer's rule (5). */
const HAMS_KEPT = 5;

/**
 * How many hams the sender sent before its first spam (as far as {@link HAMS_KEPT} counts), by
 * the mails' dates: the same whatever order its mails came in; 0 without a spam.
 */
function hamsBeforeFirstSpam(state: SenderState): number {
  const spam = state.firstSpam;
  return spam === null ? 0 : state.earliestHams.filter((at) => at < spam.at).length;
}

class Reputation extends Node<SenderState> {
  override async post(state: SenderState): Promise<undefined> {
    const mail = this.message!.body as unknown as ClassifiedMail;
    const trustedBefore = hamsBeforeFirstSpam(state) >= TRUSTED_AFTER;
    state[mail.label] += 1;
    if (mail.list) state.lists = withMember(state.lists, mail.list);
    state.first = Math.min(state.first ?? mail.at, mail.at);
    state.last = Math.max(state.last ?? mail.at, mail.at);
    if (mail.label === 'ham' && (state.earliestHams.length < HAMS_KEPT || mail.at < state.earliestHams.at(-1)!))
      state.earliestHams = [...state.earliestHams, mail.at].sort((a, b) => a - b).slice(0, HAMS_KEPT);
    const spam = { at: mail.at, docId: mail.docId, subject: mail.subject };
    const first = state.firstSpam;
    if (
      mail.label === 'spam' &&
      (first === null || spam.at < first.at || (spam.at === first.at && spam.docId < first.docId))
    )
      state.firstSpam = spam;
    // A sender with a good reputation who suddenly sent spam: the moderator asks a person. By the
    // mails' dates, so the alert comes once whichever of the ham and the spam arrives last.
    const hams = hamsBeforeFirstSpam(state);
    if (!trustedBefore && hams >= TRUSTED_AFTER)
      await this.send(moderator.ref('desk'), {
        sender: mail.from,
        docId: state.firstSpam!.docId,
        subject: state.firstSpam!.subject,
        ham: hams,
      });
    return undefined;
  }
}

export const sender = defineAgent('desk-sender', {
  state: (): SenderState => ({
    ham: 0,
    spam: 0,
    lists: [],
    first: null,
    last: null,
    earliestHams: [],
    firstSpam: null,
  }),
  turn: () => new Reputation({ name: 'reputation' }),
  subscribe: { [MAIL_CLASSIFIED]: (body) => (body as unknown as ClassifiedMail).from },
});

// --- list: a digest of its ham ----------------------------------------------------------------

interface Digest {
  /** The digest's number at its list. */
  number: number;
  mails: { at: number; from: string; subject: string }[];
}

export interface ListState {
  count: number;
  senders: string[];
  pending: Digest['mails'];
  digests: number;
  /** The digest written last (the desk writes each list's last digest to `out/desk/`). */
  lastDigest: Digest | null;
}

class Digests extends Node<ListState> {
  override post(state: ListState): undefined {
    const message = this.message!;
    if (message.reminder === undefined) {
      const mail = message.body as unknown as ClassifiedMail;
      state.count += 1;
      state.senders = withMember(state.senders, mail.from);
      state.pending.push({ at: mail.at, from: mail.from, subject: mail.subject });
      if (state.pending.length === 1) this.remind('flush', { afterMs: DIGEST_AFTER_MS });
    }
    if (state.pending.length >= DIGEST_SIZE || (message.reminder === 'flush' && state.pending.length > 0)) {
      state.digests += 1;
      state.lastDigest = { number: state.digests, mails: state.pending.sort((a, b) => a.at - b.at) };
      state.pending = [];
      this.cancelReminder('flush');
    }
    return undefined;
  }
}

/** Subscribes to the ham of its list: a digest every {@link DIGEST_SIZE} mails, or at its `flush` reminder. */
export const list = defineAgent('desk-list', {
  state: (): ListState => ({ count: 0, senders: [], pending: [], digests: 0, lastDigest: null }),
  turn: () => new Digests({ name: 'digest' }),
  subscribe: {
    [MAIL_CLASSIFIED]: (body) => {
      const mail = body as unknown as ClassifiedMail;
      return mail.label === 'ham' ? mail.list : undefined;
    },
  },
});

// --- moderator: asks a person -----------------------------------------------------------------

export interface ModeratorState {
  asked: number;
  /** In order of the mails' ids (the same whatever order the alerts came in). */
  verdicts: { sender: string; docId: string; verdict: string }[];
}

class Moderate extends Node<ModeratorState> {
  override prep(): Promise<Message | undefined> {
    return this.ask(REVIEWER_ADDRESS, this.message!.body, { timeoutMs: 60_000 });
  }
  override post(state: ModeratorState, answer: Message | undefined): undefined {
    const alert = this.message!.body as { sender: string; docId: string };
    state.asked += 1;
    const verdict = (answer?.body as { verdict?: string } | undefined)?.verdict ?? 'no answer';
    state.verdicts = [...state.verdicts, { sender: alert.sender, docId: alert.docId, verdict }].sort((a, b) =>
      a.docId < b.docId ? -1 : a.docId > b.docId ? 1 : 0,
    );
    return undefined;
  }
}

export const moderator = defineAgent('desk-moderator', {
  state: (): ModeratorState => ({ asked: 0, verdicts: [] }),
  turn: () => new Moderate({ name: 'ask-reviewer' }),
});

// --- the scripted reviewer: a plain flow answering the moderator ----------------------------------

class ScriptedReviewer extends Node<{ answered: number }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(REVIEWER_ADDRESS);
  }
  override async post(shared: { answered: number }, question: Message | undefined): Promise<string | undefined> {
    const body = question?.body as { stop?: boolean; ham?: number } | undefined;
    if (!question || body?.stop) return 'stop';
    // A sender with many good mails more likely had a false positive.
    await this.reply(question, { verdict: (body?.ham ?? 0) >= 5 ? 'false positive' : 'spam confirmed' });
    shared.answered += 1;
    return 'next';
  }
}

/** Answers each question at `desk.reviewer` until it gets `{ stop: true }`. */
export const scriptedReviewer = defineFlow('desk-reviewer', () => {
  const review = new ScriptedReviewer({ name: 'review' });
  review.on('next', review).on('stop', new Node({ name: 'stopped' }));
  return new Flow(review);
});

/** The desk's agent types, as engines and workers take them. */
export const deskAgents = [triage, thread, sender, list, moderator];
