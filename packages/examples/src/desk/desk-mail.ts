import PostalMime from 'postal-mime';
import type { DocumentRef } from '../documents/types.js';
import { readDocumentBytes } from '../utils/document-reader.js';
import { listCorpus } from '../utils/spam-assassin-corpus.js';

/** Largest mail the desk reads, in bytes (as the document pipeline's default). */
export const MAX_MAIL_BYTES = 512 * 1024;

/**
 * A mail of the corpus as the desk routes it: where it is, when it was sent and the keys of the
 * agents it concerns. Read by the desk's driver, in the process that replays the corpus.
 */
export interface DeskMail {
  /** The corpus document (`<group>/<number>`), also the id of the mail's conversation. */
  docId: string;
  /** Its path in the corpus (DocumentRef `path`). */
  path: string;
  /** When it was sent (its `Date` header), epoch ms. */
  at: number;
  subject: string;
  /** The sender's address, lower case; `unknown` when it has none. */
  from: string;
  /** The key of its thread agent (see {@link threadKeyOf}). */
  thread: string;
  /** The key of its list agent: the `List-Id`, when it came through a mailing list. */
  list?: string;
}

/**
 * Reads the routing facts of a corpus mail with postal-mime (headers only matter here).
 * `undefined` for a mail too large, one postal-mime rejects, or one without a `Date`.
 */
async function readDeskMail(ref: DocumentRef): Promise<DeskMail | undefined> {
  let email;
  try {
    email = await PostalMime.parse(await readDocumentBytes(ref, MAX_MAIL_BYTES));
  } catch {
    return undefined;
  }
  const at = email.date ? Date.parse(email.date) : Number.NaN;
  if (!Number.isFinite(at)) return undefined;
  const subject = (email.subject ?? '').trim();
  const from =
    email.from && 'address' in email.from && email.from.address ? email.from.address.toLowerCase() : 'unknown';
  const listId = email.headers.find((header) => header.key === 'list-id')?.value;
  const list = listId === undefined ? undefined : listKeyOf(listId);
  return {
    docId: ref.docId,
    path: ref.path,
    at,
    subject,
    from: agentKeyOf(from),
    thread: threadKeyOf({
      messageId: email.messageId,
      inReplyTo: email.inReplyTo,
      references: email.references,
      subject,
    }),
    ...(list ? { list } : {}),
  };
}

/**
 * The thread of a mail (the desk's `thread` agent key): the first id of its `References` (the
 * thread's first mail), else its `In-Reply-To`, else its own `Message-ID` (a thread's first mail
 * names itself), else its normalised subject (`Re:`, `Fwd:` and `[list]` tags off, lower case).
 */
export function threadKeyOf(headers: {
  messageId?: string | undefined;
  inReplyTo?: string | undefined;
  references?: string | undefined;
  subject: string;
}): string {
  const ids = (value: string | undefined): string[] => value?.match(/<[^<>\s]+>/g) ?? [];
  const id = ids(headers.references)[0] ?? ids(headers.inReplyTo)[0] ?? ids(headers.messageId)[0];
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

/** The list of a `List-Id` header (RFC 2919): the id between angle brackets, else the value. */
export function listKeyOf(listId: string): string | undefined {
  const id = /<([^<>\s]+)>/.exec(listId)?.[1] ?? listId.trim();
  return id === '' ? undefined : agentKeyOf(id.toLowerCase());
}

/** An agent key from any text: whitespace and `/` replaced, at most 200 characters. */
export function agentKeyOf(text: string): string {
  return text.replace(/[\s/]+/g, '_').slice(0, 200) || '_';
}

/** Every corpus mail with a date, in date order (then by document id): about 4 s for the 6,046. */
export async function readCorpusMails(): Promise<DeskMail[]> {
  const mails: DeskMail[] = [];
  for (const ref of listCorpus()) {
    const mail = await readDeskMail(ref);
    if (mail) mails.push(mail);
  }
  return mails.sort((a, b) => a.at - b.at || (a.docId < b.docId ? -1 : 1));
}

/** Mails the desk replays by default (`npm start -- --desk`). */
export const DESK_SAMPLE_SIZE = 1000;

/**
 * Where a sample starts (epoch ms): August 2002, when the corpus's mailing lists are busiest (its
 * earlier mails are mostly spam of 2001 and spring 2002).
 */
const DESK_SAMPLE_FROM = Date.UTC(2002, 7, 1);

/** The first `size` of `mails` (in date order) from August 2002 on. */
export function deskSample(mails: readonly DeskMail[], size: number): DeskMail[] {
  return mails.filter((mail) => mail.at >= DESK_SAMPLE_FROM).slice(0, size);
}
