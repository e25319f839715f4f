import { processMailboxes } from './in-memory-mailboxes.js';
import type { Mailbox } from './message.js';

const MAILBOX = Symbol.for('queueflow.mailbox');

/** Gives a per-visit copy the mailbox of the step running it (engines do this). */
export function attachMailbox(node: object, mailbox: Mailbox): void {
  (node as Record<symbol, Mailbox>)[MAILBOX] = mailbox;
}

/** The mailbox node code talks to: its step's on an engine, else this process's ({@link processMailboxes}). */
export function mailboxOf(node: object): Mailbox {
  return (node as Record<symbol, Mailbox | undefined>)[MAILBOX] ?? processMailboxes;
}
