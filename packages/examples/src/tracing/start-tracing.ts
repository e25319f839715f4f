import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ConsoleSpanExporter, SimpleSpanProcessor, TracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { JsonLinesSpanExporter } from './json-lines-exporter.js';

/** Where spans go; unset ones come from the environment. */
export interface TracingOptions {
  /** `service.name` of this process's spans. @defaultValue `OTEL_SERVICE_NAME`, else `queueflow` */
  serviceName?: string;
  /** Export over OTLP/HTTP to this endpoint. @defaultValue `OTEL_EXPORTER_OTLP_ENDPOINT` */
  otlpEndpoint?: string;
  /** Also append each span as a JSON line to this file. @defaultValue `QUEUEFLOW_TRACE_FILE` */
  file?: string;
  /** Print spans with the SDK's console exporter. @defaultValue when neither OTLP nor a file is set */
  console?: boolean;
}

/**
 * The application's side of tracing: queueflow only calls `@opentelemetry/api`, so a process
 * that wants spans registers an SDK, as here: a tracer provider exporting to the console, and
 * over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (Jaeger, Tempo, Honeycomb, an OpenTelemetry
 * collector), and a context manager so that spans started inside a step are its children.
 * Every span is exported as it ends (a simple processor), so a worker stopped with SIGTERM loses
 * none. Call once, before the engine or worker starts; `shutdown` flushes and stops.
 *
 * @example
 * ```ts
 * const tracing = startTracing({ serviceName: 'pipeline-client' });
 * const result = await engine.run(documents, shared);
 * await tracing.shutdown();
 * ```
 */
export function startTracing(options: TracingOptions = {}): { shutdown(): Promise<void> } {
  const serviceName = options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'queueflow';
  const otlp = options.otlpEndpoint ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const file = options.file ?? process.env.QUEUEFLOW_TRACE_FILE;
  const processors: SpanProcessor[] = [];
  if (otlp) {
    const url = `${otlp.replace(/\/$/, '')}/v1/traces`;
    processors.push(new SimpleSpanProcessor({ exporter: new OTLPTraceExporter({ url }) }));
  }
  if (file) processors.push(new SimpleSpanProcessor({ exporter: new JsonLinesSpanExporter(file) }));
  if (options.console ?? processors.length === 0) {
    processors.push(new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() }));
  }
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, 'process.pid': process.pid }),
    spanProcessors: processors,
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return { shutdown: () => provider.shutdown() };
}
