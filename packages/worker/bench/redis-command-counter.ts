import { Redis } from 'ioredis';

/**
 * Redis commands sent, by name (`lua:<script>` for a script); `(pipelines)` counts pipelines,
 * `(bytes out)` the bytes of the commands' arguments, `(bytes in)` those of their replies (strings
 * and buffers, RESP framing left out either way: what the work itself moves).
 */
export type CommandCounts = Record<string, number>;

/**
 * Counts every Redis command this process sends from now on (ioredis `sendCommand`, Lua scripts
 * by the name they were defined under), so a benchmark can say what one unit of work costs.
 */
export function countRedisCommands(): { readonly counts: CommandCounts; reset(): void } {
  let counts: CommandCounts = {};
  const pipelines = new WeakSet<object>();
  /** Script names by sha1 (the lookup below runs for every script call). */
  const scripts = new Map<string, string>();
  const proto = Redis.prototype as unknown as {
    sendCommand(command: { name: string; args: unknown[]; promise?: Promise<unknown> }, stream?: object): unknown;
    scriptsSet?: Record<string, { sha: string }>;
  };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: typeof proto, command, stream) {
    let name = command.name.toLowerCase();
    if (name === 'evalsha' || name === 'eval') {
      const sha = String(command.args[0]);
      let script = scripts.get(sha);
      if (script === undefined) {
        script = `lua:${Object.entries(this.scriptsSet ?? {}).find(([, s]) => s.sha === sha)?.[0] ?? '?'}`;
        if (script !== 'lua:?') scripts.set(sha, script);
      }
      name = script;
    }
    counts[name] = (counts[name] ?? 0) + 1;
    counts['(bytes out)'] = (counts['(bytes out)'] ?? 0) + byteSize(command.args);
    // The reply is counted into the counts of when it came (a reset in between drops it).
    command.promise?.then(
      (reply) => {
        counts['(bytes in)'] = (counts['(bytes in)'] ?? 0) + byteSize(reply);
      },
      () => {},
    );
    if (stream && !pipelines.has(stream)) {
      pipelines.add(stream);
      counts['(pipelines)'] = (counts['(pipelines)'] ?? 0) + 1;
    }
    return original.call(this, command, stream);
  };
  return {
    get counts() {
      return counts;
    },
    reset: () => {
      counts = {};
    },
  };
}

/** Bytes of a command's arguments or of a reply: strings, buffers and numbers, nested arrays summed. */
function byteSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (Buffer.isBuffer(value)) return value.length;
  if (typeof value === 'number') return String(value).length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + byteSize(item), 0);
  return 0;
}

/**
 * `counts` per unit of work (`units` of them), by kind, the most frequent first, those under
 * 0.05 per unit left out, with `digits` decimals: e.g. `lua:commitStep 1.00, evalsha 0.50`. Also
 * the total, the pipelines and the bytes (out and in) per unit.
 */
export function perUnit(
  counts: CommandCounts,
  units: number,
  digits = 2,
): { total: number; pipelines: number; bytesOut: number; bytesIn: number; byKind: string } {
  const entries = Object.entries(counts).filter(([name]) => !name.startsWith('('));
  const total = entries.reduce((sum, [, n]) => sum + n, 0) / units;
  const byKind = entries
    .filter(([, n]) => n / units >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${(n / units).toFixed(digits)}`)
    .join(', ');
  return {
    total,
    pipelines: (counts['(pipelines)'] ?? 0) / units,
    bytesOut: (counts['(bytes out)'] ?? 0) / units,
    bytesIn: (counts['(bytes in)'] ?? 0) / units,
    byKind,
  };
}
