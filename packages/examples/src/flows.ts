/**
 * The flows module that queueflow workers load:
 *
 * ```sh
 * npx queueflow worker --flows packages/examples/dist/flows.js --redis redis://127.0.0.1:6379
 * ```
 *
 * It exports one flow, `documents` (the document pipeline), and warms up this process before it
 * returns (a top-level `await`): the wink-nlp model is loaded and the spam classifier trained
 * (6 to 10 s) while the worker is starting, before it connects and takes any step. Trained lazily
 * instead, the first `classify` step of each worker would wait that long with its siblings, and
 * the time would show up in the run as a slow document. The worker prints `ready` only once warm.
 *
 * Clients that only start runs import `documents` from `./documents/documents-flow.js` (or the
 * package index), which does not train anything.
 */
import { documents } from './documents/documents-flow.js';
import { warmUpPipeline } from './documents/warm-up-pipeline.js';

export { documents };

console.error(`queueflow examples (pid ${process.pid}): loading the NLP model and training the spam classifier...`);
const warm = await warmUpPipeline();
const t = warm.classifier;
console.error(
  `queueflow examples (pid ${process.pid}): warm in ${(warm.ms / 1000).toFixed(1)} s ` +
    `(classifier: ${t.spam + t.ham} training emails, ${t.vocabulary} words)`,
);
