import { agentKeyOf } from './agent-key.js';
import { list, moderator, REVIEWER_ADDRESS, sender, thread, triage, type ModeratorState } from './desk-agents.js';
import type { DeskMail } from './desk-mail.js';

/** A message one of the desk's agents sent: from its address to the receiver's mailbox. */
export interface DeskMessage {
  from: string;
  to: string;
}

/**
 * The messages the desk's agents sent each other in a run, known from what they ended with:
 * each triaged mail's triage published it to its thread and sender (and to its list, a ham with
 * a `List-Id`); each alert went from its sender to the moderator, who asked the reviewer. The
 * replies (to the desk's asks and the moderator's) go to reply mailboxes and are not counted.
 */
export function deskMessages(
  mails: readonly DeskMail[],
  labels: ReadonlyMap<string, 'ham' | 'spam'>,
  verdicts: ModeratorState['verdicts'],
): DeskMessage[] {
  const messages: DeskMessage[] = [];
  for (const mail of mails) {
    const label = labels.get(mail.docId);
    if (label === undefined) continue;
    const from = triage.ref(agentKeyOf(mail.docId));
    messages.push({ from, to: thread.ref(mail.thread) }, { from, to: sender.ref(mail.from) });
    if (label === 'ham' && mail.list !== undefined) messages.push({ from, to: list.ref(mail.list) });
  }
  for (const verdict of verdicts)
    messages.push(
      { from: sender.ref(verdict.sender), to: moderator.ref('desk') },
      { from: moderator.ref('desk'), to: REVIEWER_ADDRESS },
    );
  return messages;
}
