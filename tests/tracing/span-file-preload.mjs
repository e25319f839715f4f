/**
 * Preloaded into a worker process (`node --import <this file>`, through NODE_OPTIONS): registers
 * a tracer provider with an in-memory exporter, and when the process exits writes every span it
 * recorded to `$QF_SPAN_DIR/spans-<pid>.json`, for a test to join with the other processes' spans
 * by trace id. The application's side of tracing, as a user would set it up (queueflow itself
 * only uses @opentelemetry/api).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }));

const dir = process.env.QF_SPAN_DIR;
if (dir) {
  process.on('exit', () => {
    const spans = exporter.getFinishedSpans().map((span) => ({
      pid: process.pid,
      name: span.name,
      kind: span.kind,
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
      parentSpanId: span.parentSpanContext?.spanId,
      attributes: span.attributes,
      links: span.links.map((link) => ({ traceId: link.context.traceId, spanId: link.context.spanId })),
      status: span.status,
      events: span.events.map((event) => event.name),
      startMs: span.startTime[0] * 1000 + span.startTime[1] / 1e6,
      endMs: span.endTime[0] * 1000 + span.endTime[1] / 1e6,
    }));
    writeFileSync(join(dir, `spans-${process.pid}.json`), JSON.stringify(spans));
  });
}
