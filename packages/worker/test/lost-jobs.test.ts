import { describe, expect, it } from 'vitest';
import { LostJobs } from '../src/lost-jobs.js';

/** BullMQ's errors about a job a fenced worker gave up are said once, by the fence line: not logged again. */
describe('LostJobs', () => {
  const lost = new LostJobs();
  lost.add('run1-4');

  it("covers BullMQ's words on a job given up here", () => {
    expect(lost.covers(new Error('Missing lock for job run1-4. moveToFinished'))).toBe(true);
    expect(lost.covers(new Error('Lock mismatch for job run1-4. Cmd moveToFinished from active'))).toBe(true);
    expect(lost.covers(new Error('could not renew lock for job run1-4'))).toBe(true);
  });

  it('leaves errors about other jobs, and other errors, to be logged', () => {
    expect(lost.covers(new Error('Lock mismatch for job run2-0. Cmd moveToFinished from active'))).toBe(false);
    expect(lost.covers(new Error('Connection is closed.'))).toBe(false);
  });
});
