import { agentKeyOf } from './agent-key.js';

/** The headers a mail is threaded by (postal-mime's names; ids as in the headers, `<...>`). */
export interface ThreadHeaders {
  messageId?: string | undefined;
  inReplyTo?: string | undefined;
  references?: string | undefined;
  subject: string;
}

/** The message ids a header names (`<id>` each, brackets kept), in order. */
function idsOf(value: string | undefined): string[] {
  return value?.match(/<[^<>\s]+>/g) ?? [];
}

/**
 * The thread a mail names by itself (the desk's `thread` agent key): the first id of its
 * `References` (the thread's first mail), else its `In-Reply-To`, else its own `Message-ID` (a
 * thread's first mail names itself), else its normalised subject (`Re:`, `Fwd:` and `[list]` tags
 * off, lower case). A reply that names only its parent (`In-Reply-To`) gets its parent's id here,
 * not its parent's thread: {@link MailThreads} puts it there.
 */
export function threadKeyOf(headers: ThreadHeaders): string {
  const id = idsOf(headers.references)[0] ?? idsOf(headers.inReplyTo)[0] ?? idsOf(headers.messageId)[0];
  if (id !== undefined) return agentKeyOf(id.slice(1, -1));
  return agentKeyOf(`subject:${normalSubject(headers.subject) || '(none)'}`);
}

/** A subject without reply and forward prefixes or list tags, in lower case, spaces collapsed. */
export function normalSubject(subject: string): string {
  let rest = subject.toLowerCase();
  for (let before = ''; before !== rest;) {
    before = rest;
    rest = rest.replace(/^\s*(?:(?:re|fwd?|aw)(?:\[\d+\])?\s*:|\[[^\]]*\])\s*/, '');
  }
  return rest.replace(/\s+/g, ' ').trim();
}

/**
 * Threads mails in the order they are replayed (date order, in the process that replays them):
 * a mail joins the thread of the first message id it names (`References`, then `In-Reply-To`,
 * then its own `Message-ID`) that an earlier mail named, else starts the thread
 * {@link threadKeyOf} gives; every id it names then belongs to its thread. So a reply that names
 * only its parent joins the thread its parent joined, whatever key the parent had, and a parent
 * dated after its reply (a wrong clock) joins the reply's thread. The same mails in the same order
 * get the same keys, embedded or on any number of workers: the keys are made before any mail is
 * sent. A thread once started is never merged into another (its agent has counted its mails):
 * a mail naming ids of two threads joins the first it names.
 */
export class MailThreads {
  /** Each message id seen, `<...>`, and the key of its thread. */
  private readonly threadOf = new Map<string, string>();

  /** The thread key of the next mail in replay order; remembers the ids it names. */
  keyOf(headers: ThreadHeaders): string {
    const ids = [...idsOf(headers.references), ...idsOf(headers.inReplyTo), ...idsOf(headers.messageId)];
    let key: string | undefined;
    for (const id of ids) if ((key = this.threadOf.get(id)) !== undefined) break;
    key ??= threadKeyOf(headers);
    for (const id of ids) if (!this.threadOf.has(id)) this.threadOf.set(id, key);
    return key;
  }
}
