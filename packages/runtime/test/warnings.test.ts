/**
 * The warning channel: one replaceable handler; the default calls process.emitWarning with a
 * stable code; setWarningHandler(null) restores it.
 */
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Flow, Node, setWarningHandler, type WarningCode } from '../src/index.js';
import { flushMacrotask } from './helpers.js';

interface ProcessWarning extends Error {
  code?: string;
}

/** Collects the process 'warning' events emitted while `fn` runs (and the turn after). */
async function processWarnings(fn: () => unknown): Promise<ProcessWarning[]> {
  const seen: ProcessWarning[] = [];
  const listener = (warning: ProcessWarning): void => {
    if (warning.name === 'QueueflowWarning') seen.push(warning);
  };
  process.on('warning', listener);
  try {
    await fn();
    await flushMacrotask();
    await flushMacrotask();
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

class Tag extends Node<{ log: string[] }> {
  constructor(private readonly action?: string) {
    super();
  }
  override post(shared: { log: string[] }): string | undefined {
    shared.log.push('ran');
    return this.action;
  }
}

describe('warning channel', () => {
  // The suite's setup file quiets QF_SUCCESSOR_OVERWRITTEN; these tests are about the default.
  beforeEach(() => {
    setWarningHandler(null);
  });
  afterEach(() => {
    setWarningHandler(null);
  });

  it('by default emits a process warning named QueueflowWarning with a stable code', async () => {
    const event = once(process, 'warning') as Promise<[ProcessWarning]>;
    const a = new Tag();
    a.next(new Tag());
    a.next(new Tag());
    const [warning] = await event;
    expect(warning.name).toBe('QueueflowWarning');
    expect(warning.code).toBe('QF_SUCCESSOR_OVERWRITTEN');
    expect(warning.message).toBe("Overwriting successor for action 'default'");
  });

  it('each warning has its own code by default', async () => {
    const seen = await processWarnings(async () => {
      const a = new Tag('elsewhere');
      a.next(new Tag());
      a.next(new Tag()); // QF_SUCCESSOR_OVERWRITTEN
      await a.run({ log: [] }); // QF_NODE_WONT_RUN_SUCCESSORS
      await new Flow(a).run({ log: [] }); // QF_FLOW_ENDS
    });
    expect(seen.map((w) => [w.code, w.message])).toEqual([
      ['QF_SUCCESSOR_OVERWRITTEN', "Overwriting successor for action 'default'"],
      ['QF_NODE_WONT_RUN_SUCCESSORS', "Node won't run successors. Use Flow."],
      ['QF_FLOW_ENDS', "Flow ends: 'elsewhere' not found in [default]"],
    ]);
  });

  it('is replaceable: a handler gets (code, message) and nothing reaches process', async () => {
    const got: Array<[WarningCode, string]> = [];
    setWarningHandler((code, message) => got.push([code, message]));
    const seen = await processWarnings(() => {
      const a = new Tag();
      a.on('x', new Tag());
      a.on('x', new Tag());
    });
    expect(got).toEqual([['QF_SUCCESSOR_OVERWRITTEN', "Overwriting successor for action 'x'"]]);
    expect(seen).toEqual([]);
  });

  it('can silence warnings', async () => {
    setWarningHandler(() => {});
    const seen = await processWarnings(async () => {
      const a = new Tag();
      a.next(new Tag());
      await a.run({ log: [] });
    });
    expect(seen).toEqual([]);
  });

  it('can turn warnings into errors', async () => {
    setWarningHandler((code, message) => {
      throw new Error(`${code}: ${message}`);
    });
    const a = new Tag();
    a.next(new Tag());
    expect(() => a.next(new Tag())).toThrow("QF_SUCCESSOR_OVERWRITTEN: Overwriting successor for action 'default'");
    const shared = { log: [] as string[] };
    await expect(a.run(shared)).rejects.toThrow('QF_NODE_WONT_RUN_SUCCESSORS');
    expect(shared.log).toEqual([]);
  });

  it('setWarningHandler(null) restores the default channel', async () => {
    const got: string[] = [];
    setWarningHandler((code) => got.push(code));
    setWarningHandler(null);
    const seen = await processWarnings(() => {
      const a = new Tag();
      a.next(new Tag());
      a.next(new Tag());
    });
    expect(got).toEqual([]);
    expect(seen.map((w) => w.code)).toEqual(['QF_SUCCESSOR_OVERWRITTEN']);
  });
});
