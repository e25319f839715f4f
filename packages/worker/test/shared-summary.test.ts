/**
 * `queueflow status`'s summary of a large `shared`: small ones as they are; large ones as their
 * top-level keys, each with its value when short, else its type and size; at most 50 keys.
 */
import { describe, expect, it } from 'vitest';
import { summariseShared } from '../src/cli/shared-summary.js';

const HINT = '`queueflow status r1 --shared`';

describe('summariseShared', () => {
  it('keeps a shared of at most the limit as it is', () => {
    const shared = { a: 1, list: [1, 2, 3] };
    expect(summariseShared(shared, HINT, JSON.stringify(shared).length)).toBe(shared);
  });

  it('lists the keys of a larger one: short values as they are, others by type and size', () => {
    const shared = {
      id: 'doc-1',
      records: { a: 'x'.repeat(100), b: 2 },
      tags: ['x'.repeat(90)],
      n: 3,
      text: 'y'.repeat(81),
    };
    const bytes = JSON.stringify(shared).length;
    expect(summariseShared(shared, HINT, 100)).toEqual({
      '(summary)': `${bytes} bytes of JSON in 5 keys: too large to print here; ${HINT} prints it whole`,
      id: 'doc-1',
      records: `(object: 2 keys, ${JSON.stringify(shared.records).length} bytes)`,
      tags: '(array: 1 item, 94 bytes)',
      n: 3,
      text: '(string: 83 bytes)',
    });
  });

  it('lists at most 50 keys and counts the others; sizes are UTF-8 bytes', () => {
    const shared = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, 'é'.repeat(50)]));
    const summary = summariseShared(shared, HINT, 1000) as Record<string, unknown>;
    expect(Object.keys(summary)).toHaveLength(1 + 50 + 1);
    expect(summary.k0).toBe('(string: 102 bytes)');
    expect(summary.k50).toBeUndefined();
    expect(summary['(more)']).toBe('30 more keys');
  });

  it('describes a large shared that is not an object in one line', () => {
    expect(summariseShared('z'.repeat(10), HINT, 5)).toBe(`(string: 12 bytes; ${HINT} prints it whole)`);
  });
});
