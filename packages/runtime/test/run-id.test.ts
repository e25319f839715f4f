import { describe, expect, it } from 'vitest';
import { newRunId } from '../src/kernel.js';

describe('newRunId', () => {
  it('gives 21 letters and digits, so no id reads as a command-line option, and no id twice', () => {
    const ids = Array.from({ length: 20_000 }, () => newRunId());
    for (const id of ids) expect(id).toMatch(/^[0-9A-Za-z]{21}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
