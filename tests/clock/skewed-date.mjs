/**
 * Preloaded into a worker process (NODE_OPTIONS=--import) to shift its clock: Date.now() runs
 * QF_TEST_CLOCK_OFFSET_MS ahead (or behind) of the system's, as on a machine whose clock is off.
 * BullMQ reads Date.now() for its delayed jobs; queueflow's ServerClock measures the offset.
 */
import { env } from 'node:process';

const offsetMs = Number(env.QF_TEST_CLOCK_OFFSET_MS ?? 0);
const systemNow = Date.now;
Date.now = () => systemNow() + offsetMs;
