/**
 * The batch's per-run limit of documents in flight (`params.concurrency`): set on the visit's copy
 * by `prep`, never on the template, and validated.
 */
import { describe, expect, it } from 'vitest';
import { buildDocumentPipeline, createPipelineShared, documents, type PipelineShared } from '../src/index.js';

describe('DocumentBatchFlow params.concurrency', () => {
  const shared = (): PipelineShared => createPipelineShared({ source: 'spam-assassin', limit: 5 });

  it('sets the limit of the copy a visit runs, leaving the template alone', async () => {
    const template = buildDocumentPipeline({ concurrency: 8 });
    const copy = template.clone();
    copy.setParams({ concurrency: 64 });
    const docs = await copy.prep(shared());
    expect(docs).toHaveLength(5);
    expect(copy.concurrency).toBe(64);
    expect(template.concurrency).toBe(8);
  });

  it("keeps the flow's limit when the run sets none", async () => {
    const copy = buildDocumentPipeline({ concurrency: 3 }).clone();
    copy.setParams({ maxBytes: 1000 });
    await copy.prep(shared());
    expect(copy.concurrency).toBe(3);
  });

  it.each([0, -1, 2.5, '8'])('refuses %j, naming the param', async (value) => {
    const copy = buildDocumentPipeline().clone();
    copy.setParams({ concurrency: value as number });
    await expect(copy.prep(shared())).rejects.toThrow(
      /expected `params.concurrency` to be an integer from 1 and up, got/,
    );
  });

  it('is registered for the engines as `documents`, with the default limit', () => {
    expect(documents.name).toBe('documents');
    expect((documents.build() as ReturnType<typeof buildDocumentPipeline>).concurrency).toBe(8);
  });
});

describe('DocumentBatchFlow post', () => {
  it("gives a document whose walk failed on an engine a failure record with the walk's error", async () => {
    const flow = buildDocumentPipeline();
    const shared = createPipelineShared({ source: 'spam-assassin', limit: 2 });
    const docs = await flow.prep(shared);
    const error = { name: 'QueueflowError', code: 'NOT_JSON', message: "exec result of 'analyse' is NaN" };
    flow.post(shared, docs, [
      { ok: true, value: null },
      { ok: false, error },
    ]);
    const [first, second] = docs.map((doc) => shared.records[doc.docId]!);
    expect(first!.failure).toEqual({
      stage: 'batch',
      code: 'ERROR',
      reason: "the document's flow ended without writing a record",
    });
    expect(second!.status).toBe('failed');
    expect(second!.failure).toEqual({
      stage: 'batch',
      code: 'ERROR',
      reason: "the document's flow ended without writing a record: NOT_JSON: exec result of 'analyse' is NaN",
    });
  });
});
