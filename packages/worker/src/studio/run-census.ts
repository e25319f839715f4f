import type { RunStatus, StudioEngine, RunSummary } from './studio-engine.js';
import { RUN_STATUSES } from './studio-input.js';

/** Runs per status. */
export type StatusCounts = Record<RunStatus, number>;

/** The runs an engine lists, counted: what the runs page's counts and id search read. */
export interface Census {
  /** Runs per status, every flow. */
  counts: StatusCounts;
  /** Runs per status of each flow, flows by name. */
  flows: Record<string, StatusCounts>;
  /** Runs counted. */
  total: number;
  /** `true` when the engine holds more runs than a census counts (`maxRuns`): counts are a floor. */
  capped: boolean;
  /** When it was taken, epoch ms. */
  at: number;
  /** The runs, newest first, for search by id. */
  runs: RunSummary[];
}

export interface RunCensusOptions {
  /** How long a census is reused, in ms. @defaultValue 1000 */
  maxAgeMs?: number;
  /** Most runs counted. @defaultValue 100000 */
  maxRuns?: number;
}

function zeroCounts(): StatusCounts {
  return Object.fromEntries(RUN_STATUSES.map((status) => [status, 0])) as StatusCounts;
}

/**
 * Counts of runs per status and flow, taken from one `engine.list` at most once per `maxAgeMs`
 * however many pages and clients ask: the engine has no count query, so one listing is shared.
 * A call while one is being taken waits for it.
 */
export class RunCensus {
  private readonly maxAgeMs: number;
  private readonly maxRuns: number;
  private last: Census | undefined;
  private pending: { at: number; census: Promise<Census> } | undefined;

  constructor(
    private readonly engine: Pick<StudioEngine, 'list'>,
    options: RunCensusOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxAgeMs = options.maxAgeMs ?? 1000;
    this.maxRuns = options.maxRuns ?? 100_000;
  }

  /**
   * A census at most `maxAgeMs` old, and taken at `notBefore` or later (after a change the
   * caller knows of).
   */
  get(notBefore = 0): Promise<Census> {
    const now = this.now();
    if (this.last && this.last.at >= notBefore && now - this.last.at < this.maxAgeMs) return Promise.resolve(this.last);
    if (this.pending && this.pending.at >= notBefore) return this.pending.census;
    const pending = { at: now, census: this.take(now) };
    this.pending = pending;
    void pending.census.finally(() => this.pending === pending && (this.pending = undefined)).catch(() => {});
    return pending.census;
  }

  private async take(at: number): Promise<Census> {
    const listed = await this.engine.list({ limit: this.maxRuns + 1 });
    const runs = listed.slice(0, this.maxRuns);
    const counts = zeroCounts();
    const flows: Record<string, StatusCounts> = {};
    for (const run of runs) {
      counts[run.status] += 1;
      (flows[run.flow] ??= zeroCounts())[run.status] += 1;
    }
    const census = { counts, flows, total: runs.length, capped: listed.length > this.maxRuns, at, runs };
    if (!this.last || this.last.at <= at) this.last = census;
    return census;
  }
}
