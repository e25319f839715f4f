/**
 * Issue 18, item 2: a deployment's partitions, each with a hash tag of its own, spread evenly over
 * the 16384 hash slots, and where runs, tasks and mailboxes live. No Redis needed.
 */
import { describe, expect, it } from 'vitest';
import { Partitions, partitionPrefixes } from '@queueflow/worker';
import { keySlot } from '../../packages/worker/src/key-slot.js';

describe('partitionPrefixes', () => {
  it('keeps the prefix itself for one partition, and as partition 0 of many', () => {
    expect(partitionPrefixes('{qf}', 1)).toEqual(['{qf}']);
    expect(partitionPrefixes('{qf}', 16)[0]).toBe('{qf}');
    expect(partitionPrefixes('a{b}c', 4)[0]).toBe('a{b}c');
  });

  it.each([2, 3, 16, 64])('gives %i partitions hash slots in as many equal ranges', (count) => {
    const prefixes = partitionPrefixes('{qf}', count);
    expect(new Set(prefixes).size).toBe(count);
    const ranges = prefixes.map((prefix) => Math.floor((keySlot(`${prefix}:run:x`) * count) / 16384));
    expect(new Set(ranges).size).toBe(count);
  });

  it('puts the partition inside the hash tag, after a colon no user prefix can hold', () => {
    for (const prefix of partitionPrefixes('a{b}c', 8).slice(1)) expect(prefix).toMatch(/^a\{b:\d+\}c$/);
  });
});

describe('Partitions', () => {
  const partitions = new Partitions('{qf}', 16);

  it('puts every task of a run in its run’s partition', () => {
    const root = 'Z0aB3x9QkLm2nP4rS6tUv';
    const at = partitions.indexOf(root);
    for (const id of [`${root}-4`, `${root}-4-p2`]) expect(partitions.indexOf(id)).toBe(at);
    const child = `${root}.3.17`;
    for (const id of [`${child}-0`, `${child}-2-p1`]) expect(partitions.indexOf(id)).toBe(partitions.indexOf(child));
  });

  it('puts the tasks of a ParallelBatchNode’s items round the partitions, from their run’s', () => {
    const root = 'Z0aB3x9QkLm2nP4rS6tUv';
    const at = partitions.indexOf(root);
    const items = Array.from({ length: 20 }, (_, i) => partitions.indexOf(`${root}-1-i${i}`));
    expect(items).toEqual(items.map((_, i) => (at + i) % 16));
    expect(partitions.indexOf(`${root}.3.17-1-i2`)).toBe((at + 19) % 16);
  });

  it('puts the children of a fan-out round the partitions, from their parent’s', () => {
    const root = 'Z0aB3x9QkLm2nP4rS6tUv';
    const at = partitions.indexOf(root);
    expect(partitions.indexOf(`${root}.3.0`)).toBe(at);
    const children = Array.from({ length: 32 }, (_, i) => partitions.indexOf(`${root}.3.${i}`));
    expect(children).toEqual(children.map((_, i) => (at + i) % 16));
    // Nested: a grandchild counts its parent's index and its own.
    expect(partitions.indexOf(`${root}.3.5.1.2`)).toBe((at + 7) % 16);
  });

  it('places an id that is no run’s (dots, no indices) by its whole slot', () => {
    for (const id of ['a.b.c', 'x.1', 'run.1.x', '.', 'a..b']) expect(partitions.indexOf(id)).toBe(keySlot(id) % 16);
  });

  it('spreads 1,000 run ids over every partition', () => {
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 1000; i++) counts[partitions.indexOf(`run${i}abcdefghijklmnop`)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThan(1000 / 4);
  });

  it('keeps everything in partition 0 with one partition', () => {
    const one = new Partitions('{qf}', 1);
    expect(one.of('anything.1.2').prefix).toBe('{qf}');
    expect(one.ofAddress('inbox').prefix).toBe('{qf}');
  });
});
