import { QueueflowError } from '../errors/queueflow-error.js';
import type { Json } from '../json/json.js';
import { checkWellFormed } from '../core/well-formed.js';
import { checkAddress, checkMessageBody } from '../mailbox/message.js';
import type { MailboxInfo, ParkedRun } from './engine.js';
import type { RunStore } from './run-store.js';

/**
 * What waiting agents need (DESIGN "Mailboxes"): the mailboxes with messages or parked runs, and
 * a person's answer to a question an `ask` left in one.
 */
export class Inbox {
  constructor(
    private readonly store: RunStore,
    /** Sends `body` to `address` from outside any run, in `conversation` when given. */
    private readonly send: (address: string, body: Json, conversation?: string) => Promise<unknown>,
  ) {}

  /** Mailboxes with messages waiting or runs parked, each with its parked runs. */
  async mailboxes(messages = 20): Promise<MailboxInfo[]> {
    if (!Number.isInteger(messages) || messages < 0) {
      throw new QueueflowError(
        'INVALID_OPTION',
        `expected \`messages\` to be an integer from 0, got ${String(messages)}`,
      );
    }
    const boxes = await this.store.mailboxes(messages);
    // Waiter ids are wake ids, `<run id>-<step>-p<park count>`; run ids hold no '-'.
    const runIds = [...new Set(boxes.flatMap((box) => box.waiters.map((waiter) => waiter.split('-')[0]!)))];
    const runs = new Map((await this.store.summaries(runIds)).flatMap((run) => (run ? [[run.id, run] as const] : [])));
    return boxes.map((box) => {
      const parked: ParkedRun[] = box.waiters.flatMap((waiter) => {
        const run = runs.get(waiter.split('-')[0]!);
        if (!run || run.status !== 'waiting' || !run.replay.parked) return [];
        return [
          {
            runId: run.id,
            flow: run.flow,
            ...(run.target.node === undefined ? {} : { node: run.target.node }),
            since: run.updatedAt,
            deadline: run.replay.parked.deadline,
          },
        ];
      });
      return { address: box.address, size: box.size, messages: box.messages, parked };
    });
  }

  /**
   * Takes question `messageId` off `address` and sends `body` to its `replyTo`, in the question's
   * conversation (so the asker's turn records the answer there).
   * @throws QueueflowError MESSAGE_NOT_FOUND, INVALID_OPTION (no replyTo; an address or id not
   *   well-formed Unicode), NOT_JSON, PAYLOAD_TOO_LARGE.
   */
  async answer(address: string, messageId: string, body: Json): Promise<void> {
    checkAddress('answer', address);
    checkWellFormed('answer', 'messageId', messageId);
    checkMessageBody(body, `answer to message '${messageId}' at '${address}'`);
    const taken = await this.store.takeMessage(address, messageId);
    if (taken === undefined) {
      throw new QueueflowError(
        'MESSAGE_NOT_FOUND',
        `no message '${messageId}' waits at '${address}' (already taken or answered?)`,
        { retryable: false },
      );
    }
    if (taken === 'no-reply-to') {
      throw new QueueflowError(
        'INVALID_OPTION',
        `message '${messageId}' at '${address}' has no replyTo (it was not sent by ask): send your answer with send()`,
        { retryable: false },
      );
    }
    await this.send(taken.replyTo!, body, taken.conversation);
  }
}
