import {
  ROOT_CONTEXT,
  TraceFlags,
  isSpanContextValid,
  trace,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';

/**
 * A span's context as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), the form the
 * trace context travels in between processes: in a run's record, a fan-out's request, a message.
 * Written by queueflow itself rather than through the global propagator, so that an application
 * that registers a tracer provider and no propagator still gets runs joined into one trace.
 * `undefined` for a span that records nothing (no tracer provider registered).
 */
export function traceparentOf(span: Span): string | undefined {
  const context = span.spanContext();
  if (!isSpanContextValid(context)) return undefined;
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & TraceFlags.SAMPLED) === 1 ? '01' : '00'}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The remote span context a `traceparent` names, or `undefined` for none (or a malformed one). */
export function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!match) return undefined;
  const context: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: parseInt(match[3]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(context) ? context : undefined;
}

/** A context whose parent span is the one `traceparent` names (the root context without one). */
export function contextOf(traceparent: string | undefined): Context {
  const spanContext = spanContextOf(traceparent);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}
