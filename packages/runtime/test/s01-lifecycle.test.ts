/**
 * S1: a node visit runs prep(shared) → exec(prepRes) → post(shared, prepRes, execRes); post
 * returns the action (a string; undefined means "default").
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node } from '../src/index.js';
import { captureWarnings } from './helpers.js';

interface Shared {
  log: string[];
  input?: number;
  output?: number;
}

describe('S1 node lifecycle', () => {
  const warnings = captureWarnings();

  it('runs prep, exec, post in order and threads their results', async () => {
    const calls: unknown[][] = [];
    class Double extends Node<Shared> {
      override prep(shared: Shared): number {
        calls.push(['prep', shared]);
        shared.log.push('prep');
        return shared.input ?? 0;
      }
      override exec(prepRes: number): number {
        calls.push(['exec', prepRes]);
        return prepRes * 2;
      }
      override post(shared: Shared, prepRes: number, execRes: number): string {
        calls.push(['post', shared, prepRes, execRes]);
        shared.log.push('post');
        shared.output = execRes;
        return 'done';
      }
    }
    const shared: Shared = { log: [], input: 21 };
    const action = await new Double().run(shared);
    expect(calls).toEqual([
      ['prep', shared],
      ['exec', 21],
      ['post', shared, 21, 42],
    ]);
    expect(calls[0]?.[1]).toBe(shared);
    expect(calls[2]?.[1]).toBe(shared);
    expect(shared.output).toBe(42);
    expect(action).toBe('done');
  });

  it('passes the very prepRes object to exec and post, and the execRes object to post', async () => {
    const prepObj = { p: 1 };
    const execObj = { e: 1 };
    const seen: unknown[] = [];
    class N extends Node<Shared> {
      override prep(): object {
        return prepObj;
      }
      override exec(prepRes: unknown): object {
        seen.push(prepRes);
        return execObj;
      }
      override post(_s: Shared, prepRes: unknown, execRes: unknown): void {
        seen.push(prepRes, execRes);
      }
    }
    await new N().run({ log: [] });
    expect(seen[0]).toBe(prepObj);
    expect(seen[1]).toBe(prepObj);
    expect(seen[2]).toBe(execObj);
  });

  it('base lifecycle methods are no-ops: a bare Node runs and returns undefined', async () => {
    const shared: Shared = { log: [] };
    await expect(new Node<Shared>().run(shared)).resolves.toBeUndefined();
    expect(shared).toEqual({ log: [] });
  });

  it('run returns what post returns', async () => {
    class Say extends Node<Shared> {
      constructor(private readonly action: string | undefined) {
        super();
      }
      override post(): string | undefined {
        return this.action;
      }
    }
    expect(await new Say('left').run({ log: [] })).toBe('left');
    expect(await new Say(undefined).run({ log: [] })).toBeUndefined();
  });

  it('a post returning undefined follows the "default" successor in a Flow', async () => {
    class Log extends Node<Shared> {
      constructor(
        private readonly tag: string,
        private readonly action?: string,
      ) {
        super();
      }
      override post(shared: Shared): string | undefined {
        shared.log.push(this.tag);
        return this.action;
      }
    }
    const a = new Log('a');
    a.next(new Log('b', 'right')).on('right', new Log('c'));
    const shared: Shared = { log: [] };
    await new Flow<Shared>(a).run(shared);
    expect(shared.log).toEqual(['a', 'b', 'c']);
    expect(warnings).toEqual([]);
  });

  it('awaits each step before the next (async prep/exec/post)', async () => {
    const log: string[] = [];
    class Slowish extends Node<Shared> {
      override async prep(): Promise<number> {
        await Promise.resolve();
        log.push('prep');
        return 1;
      }
      override async exec(n: number): Promise<number> {
        await Promise.resolve();
        log.push('exec');
        return n + 1;
      }
      override async post(_s: Shared, _p: number, e: number): Promise<string> {
        await Promise.resolve();
        log.push(`post:${e}`);
        return 'ok';
      }
    }
    expect(await new Slowish().run({ log: [] })).toBe('ok');
    expect(log).toEqual(['prep', 'exec', 'post:2']);
  });
});
