/**
 * The flows module that queueflow workers load:
 *
 * ```sh
 * npx queueflow worker --flows packages/examples/dist/flows.js --redis redis://127.0.0.1:6379
 * ```
 *
 * It exports the document pipeline's flow, `documents`, and the mail desk's agents and reviewer
 * flow (`deskAgents`, `scriptedReviewer`), and does nothing else at import, so
 * a worker is ready (and `queueflow graph documents` answers) within a second or two. What the
 * pipeline's nodes share is made on first use in each process: the wink-nlp model (about a
 * second) and the spam classifier, read from the cache file an earlier process wrote, or trained
 * (seconds of CPU) and cached when there is none (see `getSpamClassifier`).
 */
export { documents } from './documents/documents-flow.js';
export { deskAgents, scriptedReviewer } from './desk/desk-agents.js';
