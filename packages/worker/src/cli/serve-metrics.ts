import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { BudgetInfo } from '@queueflow/runtime';

/** What {@link serveMetrics} serves and how to stop it. */
export interface MetricsServer {
  /** The URL Prometheus scrapes. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves this process's OpenTelemetry metrics in Prometheus' text format on
 * `http://<host>:<port>/metrics` (`@opentelemetry/exporter-prometheus`), as the global meter
 * provider: queueflow's instruments (`queueflow.steps.*`, `queueflow.step.duration`,
 * `queueflow.queue.depth`, `queueflow.runs.parked`, `queueflow.budget.waits`; names read
 * `queueflow_steps_started_total` and so on there) and, from `budgets`, per budget key
 * (`queueflow.budget`): `queueflow.budget.in_use` (visits holding it), `queueflow.budget.concurrency`
 * (its limit), `queueflow.budget.window_units` (units in its window now), `queueflow.budget.rate_max`
 * (the window's limit) and `queueflow.budget.waiting` (visits waiting for it). Call it before the
 * worker starts, so its instruments are made on this provider.
 *
 * @throws Error when the port cannot be listened on (in use, not allowed).
 */
export async function serveMetrics(
  port: number,
  host: string,
  budgets: () => Promise<BudgetInfo[]>,
): Promise<MetricsServer> {
  const exporter = new PrometheusExporter({ port, host, endpoint: '/metrics', preventServerStart: true });
  await exporter.startServer();
  const provider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(provider);
  const meter = metrics.getMeter('@queueflow/worker');
  const gauges = {
    inUse: meter.createObservableGauge('queueflow.budget.in_use', {
      description: 'Visits holding the budget key in exec',
    }),
    concurrency: meter.createObservableGauge('queueflow.budget.concurrency', {
      description: "The key's concurrency limit, as last asked",
    }),
    units: meter.createObservableGauge('queueflow.budget.window_units', {
      description: 'Units taken in the sliding window ending now',
    }),
    rateMax: meter.createObservableGauge('queueflow.budget.rate_max', {
      description: "Units the key's rate allows per window, as last asked",
    }),
    waiting: meter.createObservableGauge('queueflow.budget.waiting', {
      description: 'Visits waiting for the budget key (their runs throttled)',
    }),
  };
  meter.addBatchObservableCallback(async (result) => {
    for (const budget of await budgets().catch(() => [])) {
      const at = { 'queueflow.budget': budget.key };
      result.observe(gauges.inUse, budget.inUse, at);
      result.observe(gauges.units, budget.unitsInWindow, at);
      result.observe(gauges.waiting, budget.waiting.length, at);
      if (budget.concurrency !== undefined) result.observe(gauges.concurrency, budget.concurrency, at);
      if (budget.rate) result.observe(gauges.rateMax, budget.rate.max, at);
    }
  }, Object.values(gauges));
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: async () => {
      await provider.shutdown();
      metrics.disable();
    },
  };
}
