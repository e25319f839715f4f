import { appendFileSync } from 'node:fs';
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';

/** A span as one JSON line: what {@link renderTrace} reads back. Times are epoch milliseconds. */
export interface SpanLine {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
  pid: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  links: string[];
  error?: string;
}

const ms = ([seconds, nanos]: [number, number]): number => seconds * 1000 + nanos / 1e6;

/** An attribute's value as text (`''` for none). */
export function attributeText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value as string | number | boolean);
}

/**
 * Appends each span to a file as a JSON line, synchronously (several processes may share the
 * file: each line is one `appendFileSync`). For reading a trace back without a tracing backend.
 */
export class JsonLinesSpanExporter implements SpanExporter {
  constructor(private readonly file: string) {}

  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    const lines = spans.map((span) => {
      const line: SpanLine = {
        traceId: span.spanContext().traceId,
        spanId: span.spanContext().spanId,
        ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}),
        name: span.name,
        service: attributeText(span.resource.attributes['service.name']),
        pid: Number(span.resource.attributes['process.pid'] ?? process.pid),
        startMs: ms(span.startTime),
        endMs: ms(span.endTime),
        attributes: span.attributes,
        links: span.links.map((link) => link.context.spanId),
        ...(span.status.code === SpanStatusCode.ERROR ? { error: span.status.message ?? 'error' } : {}),
      };
      return `${JSON.stringify(line)}\n`;
    });
    appendFileSync(this.file, lines.join(''));
    done({ code: 0 });
  }

  async shutdown(): Promise<void> {}
}
