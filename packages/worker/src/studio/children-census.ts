import type { ChildSummary, RunStatus, StudioEngine } from './studio-engine.js';

/** Most children the studio reads whole to count them by status and filter them. */
export const MAX_CENSUS_CHILDREN = 10_000;
const READ_PAGE = 500;

/**
 * Every child of a run's fan-out, read a page at a time, when it has at most
 * {@link MAX_CENSUS_CHILDREN}; `undefined` for a larger fan-out (counted by its progress only).
 */
export async function allChildren(
  engine: Pick<StudioEngine, 'children'>,
  runId: string,
): Promise<ChildSummary[] | undefined> {
  const all: ChildSummary[] = [];
  for (let offset = 0; ; offset += READ_PAGE) {
    const page = await engine.children(runId, { offset, limit: READ_PAGE });
    all.push(...page);
    if (all.length > MAX_CENSUS_CHILDREN) return undefined;
    if (page.length < READ_PAGE) return all;
  }
}

/** The children by status, every status named (0 for none). */
export function countByStatus(children: readonly ChildSummary[]): Record<RunStatus, number> {
  const counts: Record<RunStatus, number> = {
    queued: 0,
    running: 0,
    waiting: 0,
    throttled: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
  };
  for (const child of children) counts[child.status] += 1;
  return counts;
}
