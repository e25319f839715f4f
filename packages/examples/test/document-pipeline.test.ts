/**
 * A fixed sample of 60 SpamAssassin emails through the pipeline embedded: every document gets
 * exactly one record, the records are the same whatever the concurrency (and run to run), the
 * classifier clears an accuracy floor, and everything in `shared` is plain JSON.
 */
import { defineFlow, LocalEngine } from '@queueflow/runtime';
import { MemoryRunStore } from '@queueflow/runtime/kernel';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  buildDocumentPipeline,
  buildReport,
  createPipelineShared,
  getSpamClassifier,
  runDocumentPipeline,
  sampleCorpus,
  splitOf,
  type DocumentPipelineResult,
  type DocumentRef,
} from '../src/index.js';
import { stable } from './helpers.js';

const SAMPLE_SIZE = 60;

describe('document pipeline on a fixed sample of the corpus (embedded)', () => {
  let sample: DocumentRef[];
  let first: DocumentPipelineResult;
  let second: DocumentPipelineResult;

  // Training the classifier on 4,201 emails takes about 10 s of CPU on an idle machine; with other
  // test files running beside this one on a loaded machine the hook once went past the 60 s default
  // hook timeout. 180 s leaves ample room for that and still fails a hook that truly hangs.
  beforeAll(async () => {
    delete process.env.OPENAI_BASE_URL; // never call a model from tests
    sample = sampleCorpus(SAMPLE_SIZE);
    await getSpamClassifier(); // trains once for this process (a few seconds)
    first = await runDocumentPipeline({ source: 'spam-assassin', limit: SAMPLE_SIZE }, { concurrency: 8 });
    second = await runDocumentPipeline(sample, { concurrency: 1 }); // the same documents as an explicit list
  }, 180_000);

  it('samples the same 60 documents every time, from every group', () => {
    expect(sample).toHaveLength(SAMPLE_SIZE);
    expect(sampleCorpus(SAMPLE_SIZE)).toEqual(sample);
    const groups = new Set(sample.map((ref) => ref.docId.split('/')[0]));
    expect(groups).toEqual(new Set(['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2']));
  });

  it('writes exactly one record per document, in input order, and nothing else', () => {
    expect(first.records.map((r) => r.id)).toEqual(sample.map((ref) => ref.docId));
    expect(Object.keys(first.shared.records).sort()).toEqual(sample.map((ref) => ref.docId).sort());
    expect(first.shared.work).toEqual({});
    expect(first.records.every((r) => r.status === 'ok' && r.failure === null)).toBe(true);
  });

  it('gives the same records at concurrency 8 and 1, from a selection or a list (timings aside)', () => {
    expect(second.records.map(stable)).toEqual(first.records.map(stable));
  });

  it('keeps shared plain JSON, and small before the batch: a selection, not a list', () => {
    expect(JSON.parse(JSON.stringify(first.shared))).toEqual(first.shared);
    expect(first.shared.input).toEqual({ source: 'spam-assassin', limit: SAMPLE_SIZE });
  });

  it('fills every field of a good email', () => {
    for (const record of first.records) {
      expect(record.subject ?? record.summary).toBeTruthy();
      expect(record.language?.words).toBeGreaterThan(0);
      expect(record.keywords.length).toBeGreaterThan(0);
      expect(record.keywords.length).toBeLessThanOrEqual(8);
      expect(['spam', 'ham']).toContain(record.predictedLabel);
      expect(record.trueLabel).toBe(record.id.startsWith('spam') ? 'spam' : 'ham');
      expect(record.split).toBe(splitOf(record.id));
      expect(record.timingMs.total).toBeGreaterThanOrEqual(0);
    }
  });

  it('clears the accuracy floor on the sample and on its held-out part', () => {
    const report = buildReport(first.records, first.elapsedMs);
    const correct = first.records.filter((r) => r.predictedLabel === r.trueLabel).length;
    expect(correct / first.records.length).toBeGreaterThanOrEqual(0.93);
    expect(report.heldOut?.documents).toBeGreaterThanOrEqual(10);
    expect(report.heldOut?.accuracy).toBeGreaterThanOrEqual(0.9);
  });

  it('matches the recorded stable fields', () => {
    const digest = first.records.map((r) => ({
      id: r.id,
      senderDomain: r.senderDomain,
      predicted: r.predictedLabel,
      words: r.language?.words,
      sentences: r.language?.sentences,
      keywords: r.keywords.slice(0, 4).join(' '),
      summary: r.summary?.slice(0, 60),
    }));
    expect(digest).toMatchSnapshot();
  });

  it('gives the same records on the in-memory engine (child runs, JSON Patch merge), with no conflicts', async () => {
    // Without --llm no try calls the model, so none draws from the `llm` budget (issue 31).
    const acquire = vi.spyOn(MemoryRunStore.prototype, 'acquireBudget');
    const engine = new LocalEngine({ flows: [defineFlow('documents', buildDocumentPipeline)] });
    try {
      const handle = await engine.start(
        'documents',
        createPipelineShared({ source: 'spam-assassin', limit: SAMPLE_SIZE }),
      );
      const result = await handle.result();
      expect(result.status).toBe('completed');
      const info = await engine.get(handle.id);
      expect(info?.conflicts).toEqual([]);
      const shared = result.shared as unknown as typeof first.shared;
      expect(shared.work).toEqual({});
      expect(sample.map((ref) => stable(shared.records[ref.docId]!))).toEqual(first.records.map(stable));
      expect(acquire).not.toHaveBeenCalled();
    } finally {
      acquire.mockRestore();
      await engine.close();
    }
  });

  it('trains the classifier on the fixed split only', async () => {
    const { trainedOn } = await getSpamClassifier();
    expect(trainedOn).toMatchObject({ spam: 1297, ham: 2904, skipped: 0 });
  });
});

describe('buildDocumentPipeline', () => {
  it('builds the same named graph each time, with no runtime objects', () => {
    const names = (flow: ReturnType<typeof buildDocumentPipeline>): string[] => {
      const seen: string[] = [flow.name ?? '?', flow.start.name ?? '?'];
      const queue = [(flow.start as unknown as { start: { name?: string } }).start];
      const visited = new Set<unknown>();
      while (queue.length > 0) {
        const node = queue.shift() as unknown as { name?: string; successors: ReadonlyMap<string, unknown> };
        if (visited.has(node)) continue;
        visited.add(node);
        seen.push(node.name ?? '?');
        for (const [action, next] of node.successors) {
          seen.push(`${node.name}-${action}->${(next as { name?: string }).name}`);
          queue.push(next as never);
        }
      }
      return seen;
    };
    const a = names(buildDocumentPipeline());
    expect(a).toEqual(names(buildDocumentPipeline({ concurrency: 3 })));
    expect(a.slice(0, 3)).toEqual(['documents', 'document', 'parse']);
    for (const stage of ['parse', 'clean', 'analyse', 'summarise', 'classify']) {
      expect(a).toContain(`${stage}-fail->record`);
    }
    expect(a).toContain('classify-default->record');
  });
});
