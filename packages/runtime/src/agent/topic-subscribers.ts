import { QueueflowError } from '../errors/queueflow-error.js';
import type { Json } from '../json/json.js';
import { checkTopic } from '../mailbox/topic.js';
import type { AgentDefinition } from './define-agent.js';

/**
 * The addresses a body published on `topic` goes to (README "Agents", topics): for each agent
 * type that subscribes to the topic, the keys its mapping returns for `body`, in the order the
 * types were given, each address once.
 *
 * @throws QueueflowError `INVALID_OPTION` for a bad topic, or a mapping that returns something
 *   other than a key or a list of keys (naming the type and the topic); what the mapping throws.
 */
export function topicSubscribers(agents: Iterable<AgentDefinition<any>>, topic: string, body: Json): string[] {
  checkTopic('publish', topic);
  const addresses = new Set<string>();
  for (const agent of agents) {
    const keyOf = agent.options.subscribe?.[topic];
    if (!keyOf) continue;
    const keys: unknown = keyOf(body);
    if (keys === undefined) continue;
    const list: unknown[] = Array.isArray(keys) ? keys : [keys];
    for (const key of list) {
      if (typeof key !== 'string')
        throw new QueueflowError(
          'INVALID_OPTION',
          `agent type '${agent.type}': subscribe['${topic}'] returned ${JSON.stringify(key) ?? typeof key}, expected a key (string), a list of keys or undefined`,
          { retryable: false },
        );
      addresses.add(agent.ref(key));
    }
  }
  return [...addresses];
}
