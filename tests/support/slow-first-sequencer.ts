/**
 * The order test files start in: the files known to take longest first, then vitest's own order
 * (failed first and longest first from its results cache, else larger files first). A fresh
 * checkout (CI) has no results cache, so vitest starts small files late whatever their length:
 * `desk.int` (a few minutes of waiting on workers) started near the end and ended a pass alone
 * while the other cores idled.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Paths (from the repository's root) of the files that took longest in `.ci/run`'s passes,
 * longest first (its report prints the 10 slowest of each pass: keep this list in step).
 */
const SLOW_FILES = [
  'packages/examples/test/desk.int.test.ts',
  'tests/cli/cli.int.test.ts',
  'tests/fan-out/stalled-child.int.test.ts',
  'tests/fault/paused-worker.int.test.ts',
  'tests/conformance/limits.int.test.ts',
  'tests/conformance/error-codes.int.test.ts',
  'tests/fault/agent-messaging.int.test.ts',
  'tests/studio/studio-views.int.test.ts',
  'tests/studio/studio-access.int.test.ts',
  'tests/studio/studio-scale.int.test.ts',
  'tests/studio/studio-queues-events.int.test.ts',
  'tests/fault/agents.int.test.ts',
  'tests/cli/schedule.int.test.ts',
  'tests/cli/operate.int.test.ts',
  'tests/starter/starter.int.test.ts',
  'packages/examples/test/spam-classifier-cache.test.ts',
  'packages/examples/test/desk-llm.test.ts',
  'tests/conformance/retry.int.test.ts',
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification): number => {
      const at = SLOW_FILES.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return at === -1 ? SLOW_FILES.length : at;
    };
    // Array.prototype.sort is stable: files of one rank keep vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
