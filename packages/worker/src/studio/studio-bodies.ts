/**
 * Shapes of the studio API's answers that are more than an engine's value as it is.
 */
import type { Census, StatusCounts } from './run-census.js';
import type { ChildSummary, RunInfo, RunStatus, RunSummary } from './studio-engine.js';

/** `GET /api/runs/counts` and the `counts` event. */
export interface CountsBody {
  counts: StatusCounts;
  flows: Record<string, StatusCounts>;
  total: number;
  capped: boolean;
  at: number;
}

export function countsBody(census: Census): CountsBody {
  return { counts: census.counts, flows: census.flows, total: census.total, capped: census.capped, at: census.at };
}

/** `GET /api/runs`: one page of runs. `total` (of runs matching) is known when the census has it. */
export interface RunsPageBody {
  runs: RunSummary[];
  offset: number;
  limit: number;
  hasMore: boolean;
  total?: number;
}

/** `GET /api/runs/:id/children`: one page of a fan-out's children. */
export interface ChildrenPageBody {
  children: ChildSummary[];
  offset: number;
  limit: number;
  hasMore: boolean;
  /** Every child by status (`?status=` filters the page by one), for a fan-out of up to 10,000 children. */
  counts?: Record<RunStatus, number>;
}

/** `GET /api/runs/:id/steps/:step/diff`: `shared` before and after a committed step, and its patch. */
export interface StepDiffBody {
  step: number;
  before: unknown;
  after: unknown;
}

/** A run's summary fields out of its full record (for a search that found it with `get`). */
export function summaryOf(info: RunInfo): RunSummary {
  const { errors: _errors, conflicts: _conflicts, children: _children, shared: _shared, ...summary } = info;
  return summary;
}
