import type { DeskMail } from './desk-mail.js';

/** The topic the triage publishes each mail on, once classified. */
export const MAIL_CLASSIFIED = 'mail.classified';

/** What the triage publishes on {@link MAIL_CLASSIFIED}: the mail's routing facts and what triage found. */
export interface ClassifiedMail extends DeskMail {
  label: 'spam' | 'ham';
  /** The mail's most important sentence (wink-nlp's extractive summary), if any. */
  summary: string | null;
}

/** A mail as a thread remembers it: when, from whom, and its summary sentence. */
export interface MailPoint {
  at: number;
  docId: string;
  from: string;
  summary: string | null;
}

/** The earlier of two mails (by date, then id): the same whatever order they came in. */
export function earlier(a: MailPoint | null, b: MailPoint): MailPoint {
  return a === null || b.at < a.at || (b.at === a.at && b.docId < a.docId) ? b : a;
}

/** The later of two mails (by date, then id). */
export function later(a: MailPoint | null, b: MailPoint): MailPoint {
  return a === null || b.at > a.at || (b.at === a.at && b.docId > a.docId) ? b : a;
}

/** `list` with `value` added, kept sorted and without repeats (a set whatever the arrival order). */
export function withMember(list: string[], value: string): string[] {
  return list.includes(value) ? list : [...list, value].sort();
}
