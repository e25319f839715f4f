/**
 * The JSON boundary (DESIGN "Data"): assertJson names the first path that would not survive JSON,
 * or that JSON Patch refuses to write (issue 16, item 5), and flow.run has no boundary at all.
 */
import { describe, expect, it } from 'vitest';
import { assertJson, Flow, Node, QueueflowError } from '@queueflow/runtime';

function problemOf(value: unknown, path = 'shared'): string | undefined {
  try {
    assertJson(value, path);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(QueueflowError);
    expect(error).toMatchObject({ code: 'NOT_JSON', retryable: false });
    return (error as Error).message.replace('; values that cross the engine must survive JSON', '');
  }
}

describe('assertJson', () => {
  it('refuses an own key __proto__ anywhere, naming it in brackets', () => {
    expect(problemOf(JSON.parse('{"__proto__": {}}'))).toBe('shared["__proto__"] is a key that JSON Patch refuses');
    expect(problemOf({ a: JSON.parse('{"__proto__": 1}') as unknown })).toBe(
      'shared.a["__proto__"] is a key that JSON Patch refuses',
    );
    expect(problemOf({ list: [1, JSON.parse('{"ok": 1, "__proto__": null}') as unknown] })).toBe(
      'shared.list[1]["__proto__"] is a key that JSON Patch refuses',
    );
  });

  it('refuses a key prototype under a key constructor, and allows each alone', () => {
    expect(problemOf({ constructor: { prototype: 1 } })).toBe(
      'shared.constructor.prototype is a key that JSON Patch refuses',
    );
    expect(problemOf({ constructor: 'x', prototype: { constructor: 1 }, a: { prototype: 2 } })).toBeUndefined();
  });
});

describe('flow.run', () => {
  it('passes shared through untouched: no JSON boundary, __proto__ keys and class instances included', async () => {
    class Keep extends Node<Record<string, unknown>> {
      override post(shared: Record<string, unknown>): void {
        shared.seen = Object.keys(shared.a as object);
      }
    }
    const a = JSON.parse('{"__proto__": 1}') as unknown;
    const shared: Record<string, unknown> = { a, when: new Date(0) };
    await new Flow(new Keep()).run(shared);
    expect(shared.a).toBe(a);
    expect(shared.seen).toEqual(['__proto__']);
  });
});
