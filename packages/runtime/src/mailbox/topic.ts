import { QueueflowError } from '../errors/queueflow-error.js';

/** What a topic name is made of: letters, digits and `_ . : / -`, 1 to 200 of them. */
const TOPIC = /^[A-Za-z0-9_.:/-]{1,200}$/;

/**
 * Checks a topic name (`publish`, an agent type's `subscribe`).
 * @throws QueueflowError `INVALID_OPTION` naming the call and the value.
 */
export function checkTopic(owner: string, topic: unknown): string {
  if (typeof topic !== 'string' || !TOPIC.test(topic))
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected a topic of 1 to 200 letters, digits or _ . : / -, got ${typeof topic === 'string' ? JSON.stringify(topic.slice(0, 80)) : typeof topic}`,
      { retryable: false },
    );
  return topic;
}
