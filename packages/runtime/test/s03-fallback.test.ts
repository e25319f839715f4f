/**
 * S3: after the last failed try, execFallback(prepRes, error) runs once with the last error and
 * its return value becomes execRes for post; the default rethrows the original error.
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node } from '../src/index.js';

interface Shared {
  result?: unknown;
}

describe('S3 execFallback', () => {
  it('runs once after the last failed try, with prepRes and the last error', async () => {
    const errors: Error[] = [];
    const fallbackCalls: unknown[][] = [];
    class N extends Node<Shared> {
      override prep(): { id: number } {
        return { id: 7 };
      }
      override exec(): never {
        const error = new Error(`try ${this.currentRetry}`);
        errors.push(error);
        throw error;
      }
      override execFallback(prepRes: unknown, error: Error): string {
        fallbackCalls.push([prepRes, error]);
        return 'fell back';
      }
    }
    await new N(3).run({});
    expect(errors).toHaveLength(3);
    expect(fallbackCalls).toHaveLength(1);
    expect(fallbackCalls[0]?.[0]).toEqual({ id: 7 });
    expect(fallbackCalls[0]?.[1]).toBe(errors[2]);
  });

  it("the fallback's return value becomes execRes for post (and the action flows on)", async () => {
    class N extends Node<Shared> {
      override exec(): never {
        throw new Error('nope');
      }
      override async execFallback(): Promise<string> {
        await Promise.resolve();
        return 'fallback value';
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): string {
        shared.result = execRes;
        return 'recovered';
      }
    }
    const shared: Shared = {};
    const action = await new N(2).run(shared);
    expect(shared.result).toBe('fallback value');
    expect(action).toBe('recovered');
  });

  it('is not called when a try succeeds', async () => {
    let fallbackCalls = 0;
    class N extends Node<Shared> {
      override exec(): string {
        if (this.currentRetry === 0) throw new Error('first');
        return 'second';
      }
      override execFallback(): void {
        fallbackCalls++;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.result = execRes;
      }
    }
    const shared: Shared = {};
    await new N(2).run(shared);
    expect(fallbackCalls).toBe(0);
    expect(shared.result).toBe('second');
  });

  it('the default fallback rethrows the original error object; post does not run', async () => {
    const original = new Error('original');
    let postCalls = 0;
    class N extends Node<Shared> {
      override exec(): never {
        throw original;
      }
      override post(): void {
        postCalls++;
      }
    }
    const caught = await new N(2).run({}).catch((error: unknown) => error);
    expect(caught).toBe(original);
    expect(postCalls).toBe(0);
  });

  it('the default fallback fails the enclosing flow; successors do not run', async () => {
    const ran: string[] = [];
    class Boom extends Node<Shared> {
      override exec(): never {
        throw new Error('boom');
      }
    }
    class After extends Node<Shared> {
      override post(): void {
        ran.push('after');
      }
    }
    const boom = new Boom();
    boom.next(new After());
    await expect(new Flow<Shared>(boom).run({})).rejects.toThrow('boom');
    expect(ran).toEqual([]);
  });

  it('an error thrown by the fallback fails the node, and the fallback is not retried', async () => {
    let fallbackCalls = 0;
    class N extends Node<Shared> {
      override exec(): never {
        throw new Error('exec');
      }
      override execFallback(): never {
        fallbackCalls++;
        throw new Error('fallback too');
      }
    }
    await expect(new N(3).run({})).rejects.toThrow('fallback too');
    expect(fallbackCalls).toBe(1);
  });

  it('a non-Error thrown by exec reaches the fallback as an Error', async () => {
    let received: unknown;
    class N extends Node<Shared> {
      override exec(): never {
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw 'a string';
      }
      override execFallback(_p: unknown, error: Error): string {
        received = error;
        return 'ok';
      }
    }
    await new N().run({});
    expect(received).toBeInstanceOf(Error);
    expect((received as Error).message).toBe('a string');
  });
});
