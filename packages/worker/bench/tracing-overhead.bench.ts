/**
 * Tracing overhead per step: steps per second of a sequential 1,000-step flow with the
 * OpenTelemetry API present but no provider registered (every span a no-op) vs with an SDK
 * tracer and meter provider recording every span and metric in memory, on RedisEngine (one
 * in-process worker at concurrency 1) and on LocalEngine (in-process steps, where a per-step
 * cost shows most). Rounds alternate between the two set-ups; medians are compared.
 *
 * Usage: npm run bench -w @queueflow/worker -- tracing   (REDIS_URL selects Redis)
 *        tsx bench/tracing-overhead.bench.ts [--steps 1000] [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { metrics, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import {
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  AggregationTemporality,
} from '@opentelemetry/sdk-metrics';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, LocalEngine, Node, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: { steps: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '5' } },
});
const steps = Number(values.steps);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

interface Counter {
  count: number;
  limit: number;
}
class Tick extends Node<Counter> {
  override post(shared: Counter): string | undefined {
    shared.count += 1;
    return shared.count < shared.limit ? 'again' : undefined;
  }
}
const chain = defineFlow('bench-traced-chain', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

const spans = new InMemorySpanExporter();
const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] });
const meterProvider = new MeterProvider({
  readers: [
    new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 1000,
    }),
  ],
});

/** Registers the SDK providers (`on`) or none (`off`: the API's no-ops). */
function tracing(on: boolean): void {
  trace.disable();
  metrics.disable();
  if (on) {
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
  }
  spans.reset();
}

async function redisRound(): Promise<number> {
  const prefix = `{bench-otel-${nanoid(6)}}`;
  const worker = await startWorker({ connection: redisUrl(), flows: [chain], prefix, concurrency: 1 });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [chain], prefix });
  try {
    const started = performance.now();
    const result = await engine.run(chain, { count: 0, limit: steps });
    if (result.status !== 'completed') throw new Error(JSON.stringify(result.error));
    return steps / ((performance.now() - started) / 1000);
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

async function localRound(): Promise<number> {
  const engine = new LocalEngine({ flows: [chain] });
  try {
    const started = performance.now();
    const result = await engine.run(chain, { count: 0, limit: steps * 5 });
    if (result.status !== 'completed') throw new Error(JSON.stringify(result.error));
    return (steps * 5) / ((performance.now() - started) / 1000);
  } finally {
    await engine.close();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function compare(id: string, name: string, round: () => Promise<number>): Promise<void> {
  const off: number[] = [];
  const on: number[] = [];
  tracing(false);
  await round(); // warm-up
  tracing(true);
  await round();
  let recorded = 0;
  for (let i = 0; i < rounds; i++) {
    tracing(false);
    off.push(await round());
    tracing(true);
    on.push(await round());
    recorded = spans.getFinishedSpans().length;
  }
  const perStepUs = (1 / median(on) - 1 / median(off)) * 1e6;
  console.log(`  ${name}`);
  console.log(`    no provider (API no-ops)   : ${formatRate(median(off))} steps/s`);
  console.log(
    `    SDK providers, in memory   : ${formatRate(median(on))} steps/s (${recorded} spans in the last round)`,
  );
  console.log(
    `    overhead                   : ${((1 - median(on) / median(off)) * 100).toFixed(1)}% of the step rate, ${perStepUs.toFixed(1)} µs per step`,
  );
  recordFigure({ name: `tracing-overhead.${id}.on-off`, value: median(on) / median(off), unit: '×', better: 'higher' });
  recordFigure({ name: `tracing-overhead.${id}.per-step`, value: perStepUs, unit: 'µs', better: 'lower' });
}

/**
 * What the instrumentation of one step costs with no provider: the API calls a step's try makes
 * (a span with its attributes, a context switch, the counters and the histogram), no-ops here.
 */
function noProviderCallsPerStepUs(): number {
  tracing(false);
  const tracer = trace.getTracer('@queueflow/runtime');
  const meter = metrics.getMeter('@queueflow/runtime');
  const started = meter.createCounter('s');
  const ended = meter.createCounter('c');
  const duration = meter.createHistogram('d');
  const n = 200_000;
  const begin = performance.now();
  for (let i = 0; i < n; i++) {
    const attributes = { 'queueflow.flow': 'f', 'queueflow.node': 'n' };
    const span = tracer.startSpan('step n', {
      attributes: { 'queueflow.run.id': 'r', ...attributes, 'queueflow.step': i, 'queueflow.attempt': 0 },
    });
    started.add(1, attributes);
    span.setAttribute('queueflow.step.outcome', 'next');
    ended.add(1, attributes);
    duration.record(1, attributes);
    span.end();
  }
  return ((performance.now() - begin) * 1000) / n;
}

console.log(`tracing overhead, sequential flow, median of ${rounds} rounds`);
console.log(`  the API calls of one step with no provider: ${noProviderCallsPerStepUs().toFixed(2)} µs per step`);
await compare('redis', `RedisEngine, ${steps} steps, 1 worker at concurrency 1`, redisRound);
await compare('local', `LocalEngine, ${steps * 5} steps`, localRound);
tracing(false);
await meterProvider.shutdown();
await tracerProvider.shutdown();
