/**
 * The same fixed sample of 60 SpamAssassin emails through the pipeline embedded (`flow.run`) and
 * on RedisEngine with two `queueflow worker` processes loading the flows module: identical records,
 * compared order-independently (timings aside). Also the pipeline CLI with `--redis`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisEngine } from '@queueflow/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  documents,
  runDocumentPipeline,
  runDocumentPipelineOnEngine,
  type DocumentPipelineResult,
  type DocumentRecord,
  type EngineRunResult,
} from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../../../tests/support/worker-process.js';
import { stable } from './helpers.js';

const SAMPLE = { source: 'spam-assassin', limit: 60 } as const;
const EXAMPLES = fileURLToPath(new URL('..', import.meta.url));
const FLOWS = path.join(EXAMPLES, 'dist/flows.js');
const CLI = path.join(EXAMPLES, 'dist/cli/pipeline.js');

/** Records without timings, sorted by id: what must match between two runs. */
function comparable(records: DocumentRecord[]): ReturnType<typeof stable>[] {
  return records.map(stable).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

describe('document pipeline: embedded and on RedisEngine with 2 worker processes', () => {
  const url = redisUrl();
  const prefix = testPrefix('documents');
  let workers: WorkerProcess[] = [];
  let engine: RedisEngine;
  let embedded: DocumentPipelineResult;
  let distributed: EngineRunResult;
  const progress: { done: number; total: number; status: string | undefined }[] = [];
  const tmp = mkdtempSync(path.join(tmpdir(), 'queueflow-examples-'));

  beforeAll(async () => {
    delete process.env.OPENAI_BASE_URL; // never call a model from tests (workers inherit this env)
    // The embedded run makes this process's classifier (trained and cached, or read from the
    // cache); the workers make theirs at their first document, by then from the cache.
    const started = Promise.all([1, 2].map(() => spawnWorker({ flows: FLOWS, redisUrl: url, prefix, concurrency: 8 })));
    embedded = await runDocumentPipeline(SAMPLE, { concurrency: 8 });
    workers = await started;
    engine = new RedisEngine({ connection: url, flows: [documents], prefix });
    distributed = await runDocumentPipelineOnEngine(engine, SAMPLE, {
      concurrency: 16,
      progressIntervalMs: 50,
      onProgress: (done, total, info) => progress.push({ done, total, status: info?.status }),
    });
  }, 180_000);

  afterAll(async () => {
    await engine?.close();
    await stopWorkers(workers);
    await deletePrefix(url, prefix);
    rmSync(tmp, { recursive: true, force: true });
  }, 120_000);

  it("loads the flows module's flows (documents, the desk's reviewer) and nothing else before it is ready", () => {
    for (const worker of workers) {
      const [beforeReady] = worker.output().split(': ready');
      expect(worker.output()).toMatch(/: ready on .*flows: documents, desk-reviewer; concurrency 8\)/);
      expect(beforeReady).not.toMatch(/train|warm|model/i); // the classifier is made at the first document
    }
  });

  it('gives identical records (order-independent, timings aside), one per document', () => {
    expect(distributed.records).toHaveLength(60);
    expect(new Set(distributed.records.map((r) => r.id)).size).toBe(60);
    expect(comparable(distributed.records)).toEqual(comparable(embedded.records));
    expect(distributed.records.every((r) => r.status === 'ok')).toBe(true);
  });

  it('merges every document into shared without conflicts and leaves no work items', () => {
    expect(distributed.conflicts).toEqual([]);
    expect(distributed.queuedMs).toBeGreaterThanOrEqual(0);
    expect(distributed.elapsedMs).toBeGreaterThan(0);
    expect(distributed.shared.work).toEqual({});
    expect(Object.keys(distributed.shared.records)).toHaveLength(60);
  });

  it('reports progress from the fan-out: never backwards, ending at every document', () => {
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.every((p) => p.total === 60)).toBe(true);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.done).toBeGreaterThanOrEqual(progress[i - 1]!.done);
    expect(progress.some((p) => p.status === 'waiting')).toBe(true);
    expect(progress.at(-1)!.done).toBe(60);
  });

  it('runs from the pipeline CLI with --redis: the same records in the JSONL file, and the report', async () => {
    // As `npm run pipeline -w @queueflow/examples` run in `tmp`: the package folder as the working
    // directory, and `tmp`, where a relative --out is written, as npm's INIT_CWD.
    const out = path.join(tmp, 'documents.jsonl');
    const args = [
      CLI,
      '--redis',
      url,
      '--prefix',
      prefix,
      '--limit',
      '20',
      '--out',
      'documents.jsonl',
      '--no-progress',
    ];
    const env = { ...process.env, NODE_NO_WARNINGS: '1', INIT_CWD: tmp };
    const child = spawn(process.execPath, args, { cwd: EXAMPLES, stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    const records = lines.map((line) => JSON.parse(line) as DocumentRecord);
    expect(records).toHaveLength(20);
    const byId = new Map(embedded.records.map((r) => [r.id, r]));
    expect(comparable(records)).toEqual(comparable(records.map((r) => byId.get(r.id)!)));
    expect(stdout).toContain('queueflow document pipeline (distributed)');
    expect(stdout).toMatch(/Documents {8}20 {2}\(ok 20, failed 0/);
    expect(stdout).toContain('Merge conflicts  none');
    expect(stdout).toContain(`Records          ${out}`);
    expect(stdout).toMatch(/Waiting {10}[\d.]+ s for a worker/);
    expect(stderr).toMatch(/Run \S+ started on redis:\/\/.+, prefix /);
  }, 120_000);
});
