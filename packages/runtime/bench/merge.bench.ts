/**
 * The fan-in merge at size (issue 17): n children each writing the same key, merged with their
 * conflict reported, for n = 1,000 … 8,000. Linear: doubling n about doubles the time.
 */
import { diffShared, mergePatches } from '../src/kernel.js';

for (const n of [1000, 2000, 4000, 8000]) {
  const patches = Array.from({ length: n }, (_, i) => diffShared({}, { same: i, [`own${i}`]: i }));
  const started = performance.now();
  const merged = mergePatches({}, patches);
  const ms = performance.now() - started;
  console.log(
    `${String(n).padStart(5)} children writing one key: merged in ${ms.toFixed(1)} ms (${merged.conflicts.length} conflict, ${merged.conflicts[0]?.children.length} children)`,
  );
}
