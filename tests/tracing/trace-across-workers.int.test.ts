/**
 * Spans of one run form one trace across the client and two worker processes. Each worker
 * process registers an in-memory exporter through a preloaded module (span-file-preload.mjs)
 * and writes its spans to a file when it exits; this test registers one for the client, then
 * joins the three by trace id and checks the parent/child structure and the attributes.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { listener, traced } from './tracing-flows.js';

const FLOWS = fileURLToPath(new URL('./tracing-flows.ts', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./span-file-preload.mjs', import.meta.url));

interface SpanRecord {
  pid: number;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string | undefined;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  status: { code: number; message?: string };
  events: string[];
  startMs: number;
  endMs: number;
}

describe('tracing: one trace per run across the client and 2 worker processes', () => {
  const prefix = testPrefix('tracing');
  const spanDir = mkdtempSync(join(tmpdir(), 'queueflow-spans-'));
  const exporter = new InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }));
  const engine = new RedisEngine({ connection: redisUrl(), flows: [traced, listener], prefix });
  let workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    rmSync(spanDir, { recursive: true, force: true });
  });

  it('joins the start, every step and item try, the child runs and the run by trace id', async () => {
    const options = {
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      concurrency: 1,
      env: { NODE_OPTIONS: `--import ${PRELOAD}`, QF_SPAN_DIR: spanDir },
    };
    // The first worker serves the default queue, the second `last`'s own: both take steps of the run
    // whatever the timing (on one queue, the first could take them all).
    workers = await Promise.all([
      spawnWorker({ ...options, queues: ['default'] }),
      spawnWorker({ ...options, queues: ['traced-last'] }),
    ]);
    const address = `tracing-${prefix}`;
    // The caller's own span: the run joins the trace it is started in.
    const outer = trace.getTracer('test').startSpan('request');
    const [handle, heard] = await context.with(
      trace.setSpan(context.active(), outer),
      async () =>
        [
          await engine.start(traced, {}, { params: { address, loops: 8 } }),
          await engine.start(listener, {}, { params: { address } }),
        ] as const,
    );
    outer.end();
    expect((await handle.result()).status).toBe('completed');
    expect((await heard.result()).status).toBe('completed');
    await stopWorkers(workers);

    const client: SpanRecord[] = exporter.getFinishedSpans().map((span) => ({
      pid: process.pid,
      name: span.name,
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
      parentSpanId: span.parentSpanContext?.spanId,
      attributes: span.attributes,
      links: [],
      status: span.status,
      events: [],
      startMs: 0,
      endMs: 0,
    }));
    const files = readdirSync(spanDir).filter((file) => file.startsWith('spans-'));
    expect(files).toHaveLength(2);
    const fromWorkers = files.flatMap((file) => JSON.parse(readFileSync(join(spanDir, file), 'utf8')) as SpanRecord[]);
    const spans = [...client, ...fromWorkers];
    const request = client.find((s) => s.name === 'request')!;
    const ofRun = spans.filter((s) => s.traceId === request.traceId);
    const runId = handle.id;

    // The client's start: a child of the caller's span.
    const start = ofRun.find((s) => s.name === 'start traced')!;
    expect(start.parentSpanId).toBe(request.spanId);
    expect(start.attributes).toMatchObject({ 'queueflow.run.id': runId, 'queueflow.flow': 'traced' });

    // Every try of a step of the run: a child of the start, with its attributes, on both workers.
    const steps = ofRun.filter((s) => s.name.startsWith('step ') && s.attributes['queueflow.run.id'] === runId);
    expect(steps.every((s) => s.parentSpanId === start.spanId)).toBe(true);
    expect(new Set(steps.map((s) => s.pid)).size, 'steps ran on both workers').toBe(2);
    expect(steps.map((s) => s.name)).toEqual(
      expect.arrayContaining(['step first', 'step loop', 'step fan', 'step items', 'step last']),
    );
    for (const s of steps) {
      expect(s.attributes).toMatchObject({ 'queueflow.flow': 'traced', 'queueflow.node': s.name.slice(5) });
      expect(typeof s.attributes['queueflow.step']).toBe('number');
      expect(typeof s.attributes['queueflow.attempt']).toBe('number');
    }
    // The failed try of `last` carries its error; the retry succeeds.
    const last = steps
      .filter((s) => s.name === 'step last')
      .sort((a, b) => Number(a.attributes['queueflow.attempt']) - Number(b.attributes['queueflow.attempt']));
    expect(last.map((s) => [s.attributes['queueflow.attempt'], s.status.code])).toEqual([
      [0, 2],
      [1, 0],
    ]);
    expect(last[0]!.status.message).toBe('the first try of last fails');
    expect(last[0]!.events).toContain('exception');

    // Child runs of the fan-out: children of the span of the step that fanned out (the step that
    // entered the ParallelBatchFlow; child ids are `<run>.<step counter after it>.<index>`).
    const childSteps = ofRun.filter((s) => s.name === 'step child');
    expect(childSteps).toHaveLength(2);
    const parentStep = Number(String(childSteps[0]!.attributes['queueflow.run.id']).split('.')[1]);
    const fanOut = steps.find((s) => s.attributes['queueflow.step'] === parentStep - 1)!;
    expect(childSteps.every((s) => s.parentSpanId === fanOut.spanId)).toBe(true);
    expect(childSteps.map((s) => s.attributes['queueflow.run.id']).sort()).toEqual(
      [0, 1].map((i) => `${runId}.${parentStep}.${i}`),
    );
    const childRuns = ofRun.filter((s) => s.name === 'run traced' && s.attributes['queueflow.run.id'] !== runId);
    expect(childRuns).toHaveLength(2);
    expect(childRuns.every((s) => s.parentSpanId === fanOut.spanId)).toBe(true);

    // Items: children of the items step's fan-out span, one per item.
    const itemsStep = steps
      .filter((s) => s.name === 'step items')
      .sort((a, b) => Number(a.attributes['queueflow.step']) - Number(b.attributes['queueflow.step']))[0]!;
    const items = ofRun.filter((s) => s.name === 'item items');
    expect(items.map((s) => s.attributes['queueflow.item']).sort()).toEqual([0, 1, 2]);
    expect(items.every((s) => s.parentSpanId === itemsStep.spanId)).toBe(true);

    // The run: from its creation to its end, a child of the start, completed.
    const run = ofRun.find((s) => s.name === 'run traced' && s.attributes['queueflow.run.id'] === runId)!;
    expect(run.parentSpanId).toBe(start.spanId);
    expect(run.attributes['queueflow.run.status']).toBe('completed');
    expect(run.endMs - run.startMs).toBeGreaterThanOrEqual(
      Math.max(...steps.map((s) => s.endMs)) - Math.min(...steps.map((s) => s.startMs)) - 50,
    );

    // The listener's step that received `first`'s message links to the step that sent it.
    const sender = steps.find((s) => s.name === 'step first')!;
    const listens = spans.filter((s) => s.name === 'step listen');
    expect(
      listens.some((s) => s.links.some((link) => link.spanId === sender.spanId && link.traceId === sender.traceId)),
    ).toBe(true);
  }, 90_000);
});
