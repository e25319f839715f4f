import { describe, expect, it } from 'vitest';
import {
  LocalEngine,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_ERROR_STACK_CHARS,
  Node,
  defineFlow,
  toErrorRecord,
} from '../src/index.js';

describe('toErrorRecord', () => {
  it('cuts a huge message and stack and says how much it cut', () => {
    const error = new Error('x'.repeat(5_000_000));
    error.stack = `Error: ${'y'.repeat(100_000)}`;
    const record = toErrorRecord(error);
    expect(record.message).toHaveLength(MAX_ERROR_MESSAGE_CHARS + '… (4995904 more characters cut)'.length);
    expect(record.message.endsWith('… (4995904 more characters cut)')).toBe(true);
    expect(record.stack!.startsWith('Error: yyy')).toBe(true);
    expect(record.stack!.length).toBeLessThan(MAX_ERROR_STACK_CHARS + 50);
  });

  it('keeps what a thrown plain object says', () => {
    expect(toErrorRecord({ code: 'E_QUOTA', message: 'quota exceeded', name: 'ApiError' })).toMatchObject({
      name: 'ApiError',
      message: 'quota exceeded',
      code: 'E_QUOTA',
      retryable: true,
    });
    expect(toErrorRecord({ status: 429 })).toMatchObject({ message: '{"status":429}', code: 'NODE_FAILED' });
    expect(toErrorRecord({ retryable: false, message: 'no' }).retryable).toBe(false);
    expect(toErrorRecord('plain words').message).toBe('plain words');
    expect(toErrorRecord(42).message).toBe('42');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(toErrorRecord(cyclic).message).toBe('[object Object]');
  });

  it("a run that throws a plain object fails with the object's message and code", async () => {
    class Throws extends Node {
      override exec(): never {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- what a careless client library does
        throw { code: 'E_QUOTA', message: 'quota exceeded' };
      }
    }
    const flow = defineFlow('throws-object', () => new Throws());
    const engine = new LocalEngine({ flows: [flow] });
    const result = await (await engine.start(flow, {})).result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ message: 'quota exceeded', code: 'E_QUOTA' });
    await engine.close();
  });
});

describe('a thrown plain object', () => {
  it('leaves one error record for its one try', async () => {
    class Throws extends Node {
      override exec(): never {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- what a careless client library does
        throw { code: 'E_OBJ', message: 'plain object thrown' };
      }
    }
    const flow = defineFlow('throws-object-once', () => new Throws());
    const engine = new LocalEngine({ flows: [flow] });
    const handle = await engine.start(flow, {});
    await handle.result();
    const info = await engine.get(handle.id);
    expect(info!.errors).toHaveLength(1);
    expect(info!.errors[0]).toMatchObject({ code: 'E_OBJ', message: 'plain object thrown', attempt: 0 });
    await engine.close();
  });
});
