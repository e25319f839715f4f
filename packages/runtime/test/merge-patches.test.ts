import { describe, expect, it } from 'vitest';
import { diffShared, mergePatches } from '../src/kernel.js';

/** The patch of a child that turns `{}`-based `before` into `after`. */
const patchOf = (before: Record<string, unknown>, after: Record<string, unknown>) =>
  diffShared(before as never, after as never);

describe('mergePatches: conflicts', () => {
  it('lists a path every child wrote, with the children in param-set order', () => {
    const patches = [0, 1, 2].map((i) => patchOf({}, { winner: `k${i}` }));
    expect(mergePatches({}, patches)).toEqual({
      shared: { winner: 'k2' },
      conflicts: [{ path: '/winner', children: [0, 1, 2] }],
    });
  });

  it('lists the outer path when one child wrote it and another wrote inside it, in either order', () => {
    const outerFirst = mergePatches({ a: { b: 0 } }, [
      patchOf({ a: { b: 0 } }, { a: 5 }),
      patchOf({ a: { b: 0 } }, { a: { b: 1 } }),
    ]);
    expect(outerFirst.conflicts).toEqual([{ path: '/a', children: [0, 1] }]);
    const innerFirst = mergePatches({ a: { b: 0 } }, [
      patchOf({ a: { b: 0 } }, { a: { b: 1 } }),
      patchOf({ a: { b: 0 } }, { a: 5 }),
    ]);
    expect(innerFirst).toEqual({ shared: { a: 5 }, conflicts: [{ path: '/a', children: [0, 1] }] });
  });

  it('lists nothing for children writing distinct keys of a container they all create, or appending', () => {
    const patches = [0, 1, 2].map((i) => patchOf({}, { results: { [`k${i}`]: i }, log: [i] }));
    expect(mergePatches({}, patches)).toEqual({
      shared: { results: { k0: 0, k1: 1, k2: 2 }, log: [0, 1, 2] },
      conflicts: [],
    });
  });

  it('reports conflicts in the order they first arose', () => {
    const patches = [patchOf({}, { b: 1, a: 1 }), patchOf({}, { b: 2 }), patchOf({}, { a: 3 })];
    expect(mergePatches({}, patches).conflicts).toEqual([
      { path: '/b', children: [0, 1] },
      { path: '/a', children: [0, 2] },
    ]);
  });

  it('merges thousands of children writing one key (linear: no writer list is walked per write)', () => {
    const patches = Array.from({ length: 8000 }, (_, i) => patchOf({}, { same: i }));
    const merged = mergePatches({}, patches);
    expect(merged.shared).toEqual({ same: 7999 });
    expect(merged.conflicts).toHaveLength(1);
    expect(merged.conflicts[0]!.children).toHaveLength(8000);
  });
});
