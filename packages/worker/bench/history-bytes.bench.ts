/**
 * History storage: bytes of a run's step history on RedisEngine vs its final `shared`, for a
 * 1,000-step run whose ~50 KB `shared` changes one field per step (issue 11: records store patches,
 * not copies; the bar is under 5×). Both figures come from the same run: the history list's
 * payload (the sum of its records' lengths, LRANGE) and what Redis says the list takes (MEMORY
 * USAGE), against the final `shared` as JSON. For scale, full copies of `shared` per step would be
 * about as many times the final `shared` as the run has steps.
 *
 * Usage: tsx bench/history-bytes.bench.ts [--steps 1000 --shared-kb 50]   (REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, Node, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, RedisKeys, startWorker } from '../src/index.js';
import { deleteKeys, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: { steps: { type: 'string', default: '1000' }, 'shared-kb': { type: 'string', default: '50' } },
});
const steps = Number(values.steps);
const sharedKb = Number(values['shared-kb']);
setWarningHandler(() => {});

interface Row {
  id: number;
  text: string;
  value: number;
}
interface Shared {
  rows: Row[];
  step: number;
  limit: number;
}

/**
 * Each visit changes one field, the `value` of the next row (round robin), and counts itself in
 * `step` (so each record holds two changes: the figure is if anything high).
 */
class Touch extends Node<Shared> {
  override post(shared: Shared): string | undefined {
    const row = shared.rows[shared.step % shared.rows.length]!;
    row.value = shared.step + 1;
    shared.step += 1;
    return shared.step < shared.limit ? 'again' : undefined;
  }
}
const touch = defineFlow('bench-history', () => {
  const node = new Touch({ name: 'touch' });
  node.on('again', node);
  return new Flow(node);
});

/** Rows of ~100 bytes each, until `shared` is `kb` KB as JSON. */
function initialShared(kb: number): Shared {
  const shared: Shared = { rows: [], step: 0, limit: steps };
  let bytes = Buffer.byteLength(JSON.stringify(shared));
  for (let id = 0; bytes < kb * 1024; id++) {
    const row = { id, text: `row ${id} `.padEnd(64, '.'), value: 0 };
    shared.rows.push(row);
    bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
  }
  return shared;
}

const prefix = `{bench-history-${nanoid(6)}}`;
const keys = new RedisKeys(prefix);
const redis = new Redis(redisUrl());
const worker = await startWorker({ connection: redisUrl(), flows: [touch], prefix, concurrency: 1 });
const engine = new RedisEngine({ connection: redisUrl(), flows: [touch], prefix });
try {
  const started = performance.now();
  const result = await engine.run(touch, initialShared(sharedKb));
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 'completed' || result.shared.step !== steps)
    throw new Error(`run failed: ${JSON.stringify(result.error)}`);

  const records = await redis.lrangeBuffer(keys.history(result.id), 0, -1);
  const payload = records.reduce((sum, record) => sum + record.length, 0);
  const memory = Number(await redis.call('MEMORY', 'USAGE', keys.history(result.id), 'SAMPLES', '0'));
  const sharedBytes = Buffer.byteLength(JSON.stringify(result.shared));
  const history = await engine.history(result.id);
  if (history.length !== steps) throw new Error(`expected ${steps} records, got ${history.length}`);

  const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;
  console.log(`history of a ${steps}-step run, one field of a ${kb(sharedBytes)} shared changed per step`);
  console.log(`  final shared (JSON)            : ${kb(sharedBytes)}`);
  console.log(`  history records (sum of LRANGE): ${kb(payload)} in ${records.length} records`);
  console.log(`  history list (MEMORY USAGE)    : ${kb(memory)}`);
  console.log(`  full copies per step would be  : ${kb(sharedBytes * steps)}`);
  console.log(`  ratio, records / shared        : ${(payload / sharedBytes).toFixed(2)}× (the bar is < 5×)`);
  console.log(`  ratio, MEMORY USAGE / shared   : ${(memory / sharedBytes).toFixed(2)}×`);
  recordFigure({ name: 'history-bytes.ratio', value: payload / sharedBytes, unit: '×', better: 'lower', bar: 5 });
  recordFigure({ name: 'history-bytes.memory-ratio', value: memory / sharedBytes, unit: '×', better: 'lower' });
  console.log(`  a record, for example           : ${records[records.length >> 1]!.toString()}`);
  console.log(`  (run took ${seconds.toFixed(1)} s, ${Math.round(steps / seconds)} steps/s)`);
} finally {
  await engine.close();
  await worker.close();
  redis.disconnect();
  await deleteKeys(prefix);
}
