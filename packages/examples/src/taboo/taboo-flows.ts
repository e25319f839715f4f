/**
 * The Taboo game's two agents as registered flows, and the flows module queueflow workers load:
 *
 * ```sh
 * npx queueflow worker --flows packages/examples/dist/taboo/taboo-flows.js --redis redis://127.0.0.1:6379
 * ```
 *
 * Each agent is a Flow looping on one node that waits on its own mailbox (a parked run between
 * turns: no worker slot held), and ends on a node of its own when the game is over. Loading this
 * module has no side effects.
 */
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { GuesserAgent } from './guesser-agent.js';
import { HinterAgent } from './hinter-agent.js';

/** Tries of an agent's `exec` (a model call may fail or break the rules), 1 s apart. */
const TRIES = { maxRetries: 3, wait: 1 };

export const tabooHinter = defineFlow('taboo-hinter', () => {
  const hinter = new HinterAgent({ name: 'hinter', ...TRIES });
  hinter.on('next', hinter);
  hinter.on('over', new Node({ name: 'hinter-done' }));
  return new Flow(hinter);
});

export const tabooGuesser = defineFlow('taboo-guesser', () => {
  const guesser = new GuesserAgent({ name: 'guesser', ...TRIES });
  guesser.on('next', guesser);
  guesser.on('over', new Node({ name: 'guesser-done' }));
  return new Flow(guesser);
});
