import { QueueflowError } from '../errors/queueflow-error.js';
import type { Mailbox } from './message.js';

/** For code that may not wait on a mailbox (the items of a ParallelBatchNode fan-out). */
export const noMailbox: Mailbox = {
  send: () => Promise.reject(notHere()),
  receive: () => Promise.reject(notHere()),
  receiveAny: () => Promise.reject(notHere()),
  publish: () => Promise.reject(notHere()),
  replyAddress: () => {
    throw notHere();
  },
};

function notHere(): QueueflowError {
  return new QueueflowError(
    'INVALID_OPTION',
    'mailboxes are not available inside the items of a ParallelBatchNode on an engine: use a ParallelBatchFlow, whose children are runs',
    { retryable: false },
  );
}
