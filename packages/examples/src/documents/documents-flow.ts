import { defineFlow } from '@queueflow/runtime';
import { buildDocumentPipeline } from './document-pipeline.js';

/**
 * The document pipeline registered for the engines as `documents`: what clients start and what
 * workers run. Workers load it through the flows module `src/flows.ts` (`queueflow worker
 * --flows packages/examples/dist/flows.js`); clients import it from here or from the package's
 * index. Building it loads no model: the NLP model and the classifier are made on first use.
 *
 * Its batch keeps the flow's default limit of documents in flight (8); on the engines a run sets
 * its own with the `concurrency` param, counted across all workers.
 *
 * @example
 * ```ts
 * const engine = new RedisEngine({ connection: process.env.REDIS_URL, flows: [documents] });
 * const result = await engine.run(documents, createPipelineShared({ source: 'spam-assassin', limit: 200 }), {
 *   params: { concurrency: 64 },
 * });
 * ```
 */
export const documents = defineFlow('documents', () => buildDocumentPipeline());
