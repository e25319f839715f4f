/**
 * The module queueflow workers load for the Taboo game: its two agent types, each keyed by game id.
 *
 * ```sh
 * npx queueflow worker --flows packages/examples/dist/taboo/taboo-flows.js --redis redis://127.0.0.1:6379
 * ```
 *
 * Between turns an agent holds no run and no worker slot: a message to it starts its next turn on
 * any worker. Loading this module has no side effects.
 */
export { tabooHinter } from './hinter-agent.js';
export { tabooGuesser } from './guesser-agent.js';
