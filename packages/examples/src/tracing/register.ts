/**
 * Preload for tracing any queueflow process, the worker CLI included, without touching its code:
 *
 * ```sh
 * NODE_OPTIONS="--import ./packages/examples/dist/tracing/register.js" \
 *   OTEL_SERVICE_NAME=worker-1 npx queueflow worker --flows packages/examples/dist/flows.js
 * ```
 *
 * See {@link startTracing} for where the spans go (console; OTLP with
 * `OTEL_EXPORTER_OTLP_ENDPOINT`; a JSON-lines file with `QUEUEFLOW_TRACE_FILE`).
 */
import { startTracing } from './start-tracing.js';

startTracing();
