import { Redis } from 'ioredis';

/** Redis commands sent, by name (`lua:<script>` for a script); `(pipelines)` counts pipelines. */
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
    sendCommand(command: { name: string; args: unknown[] }, stream?: object): unknown;
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

/**
 * `counts` per unit of work (`units` of them), by kind, the most frequent first, those under
 * 0.05 per unit left out, with `digits` decimals: e.g. `lua:commitStep 1.00, evalsha 0.50`. Also
 * the total and the pipelines per unit.
 */
export function perUnit(
  counts: CommandCounts,
  units: number,
  digits = 2,
): { total: number; pipelines: number; byKind: string } {
  const entries = Object.entries(counts).filter(([name]) => name !== '(pipelines)');
  const total = entries.reduce((sum, [, n]) => sum + n, 0) / units;
  const byKind = entries
    .filter(([, n]) => n / units >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${(n / units).toFixed(digits)}`)
    .join(', ');
  return { total, pipelines: (counts['(pipelines)'] ?? 0) / units, byKind };
}
