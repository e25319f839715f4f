/**
 * infra/: the files parse, and what they name exists — the worker CLI and its options (asked
 * from the built `queueflow worker --help`), the flows module, the files they copy or mount, the
 * npm scripts they run, the env vars the CLI reads, the Secret keys they reference, and the
 * BullMQ wait list KEDA watches (built with BullMQ's own key function). No Docker or Kubernetes
 * needed; redis.conf is also loaded by a real `redis-server` when one is installed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisKeys } from '@queueflow/worker';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { freePort } from '../support/redis-server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INFRA = path.join(ROOT, 'infra');

type Json = Record<string, any>;

const readJson = (file: string): Json => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as Json;
const rootPackage = readJson('package.json');
const workerPackage = readJson('packages/worker/package.json');
const examplesPackage = readJson('packages/examples/package.json');

/** The worker CLI as the image runs it: the `queueflow` bin of @queueflow/worker. */
const WORKER_CLI = path.posix.join('packages/worker', workerPackage.bin.queueflow as string);
/** The flows module the workers load: src/flows.ts compiled by the examples' build. */
const FLOWS_MODULE = 'packages/examples/dist/flows.js';

/** `queueflow worker --help` from the built CLI (`npm test` builds first). */
const workerHelp = ((): string => {
  const result = spawnSync(process.execPath, [path.join(ROOT, WORKER_CLI), 'worker', '--help'], { encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`queueflow worker --help failed (is packages/worker built?):\n${result.stderr}`);
  return result.stdout;
})();

/** The help on one line (commander wraps it at 80 columns). */
const flatHelp = workerHelp.replace(/\s+/g, ' ');

/** Env vars the worker CLI reads, as its help lists them (`(default: ..., env: REDIS_URL)`). */
const cliEnvVars = [...flatHelp.matchAll(/\benv: ([A-Z_]+)\)/g)].map((m) => m[1]!);

/** The default of an option in the help text (`--prefix <prefix> ... (default: "{qf}")`). */
function helpDefault(flag: string): string | undefined {
  return new RegExp(`${flag} <[a-z]+> [^(]*\\(default: "([^"]*)"`).exec(flatHelp)?.[1];
}

/** Checks an argv that starts a worker, and returns its options by flag. */
function expectWorkerCommand(argv: string[], where: string): Map<string, string> {
  expect(argv.slice(0, 3), `${where}: node <queueflow bin> worker`).toEqual(['node', WORKER_CLI, 'worker']);
  const options = new Map<string, string>();
  const rest = argv.slice(3);
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i]!;
    expect(flag, `${where}: an option, then its value`).toMatch(/^--[a-z-]+$/);
    expect(workerHelp, `${where}: \`queueflow worker\` has no option ${flag}`).toContain(`${flag} `);
    expect(rest[i + 1], `${where}: ${flag} needs a value`).toBeDefined();
    options.set(flag, rest[i + 1]!);
  }
  expect(options.get('--flows'), `${where}: the pipeline's flows module`).toBe(FLOWS_MODULE);
  if (options.has('--concurrency')) expect(Number(options.get('--concurrency'))).toBeGreaterThanOrEqual(1);
  return options;
}

describe('the worker command and flows module the infra files run', () => {
  it('is the bin of @queueflow/worker, whose worker command reads REDIS_URL', () => {
    expect(WORKER_CLI).toBe('packages/worker/bin/queueflow.js');
    expect(existsSync(path.join(ROOT, WORKER_CLI))).toBe(true);
    expect(cliEnvVars).toContain('REDIS_URL');
    expect(helpDefault('--prefix')).toBe('{qf}');
  });

  it('is the examples build of src/flows.ts', () => {
    const build = readJson('packages/examples/tsconfig.build.json');
    expect(build.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist' });
    expect(existsSync(path.join(ROOT, 'packages/examples/src/flows.ts'))).toBe(true);
    expect(existsSync(path.join(ROOT, FLOWS_MODULE))).toBe(true);
    expect(examplesPackage.dependencies).toHaveProperty('@queueflow/worker');
  });

  it('is what the examples README tells users to start', () => {
    const readme = readFileSync(path.join(ROOT, 'packages/examples/README.md'), 'utf8');
    expect(readme).toContain(`npx queueflow worker --flows ${FLOWS_MODULE}`);
    expect(Object.keys(workerPackage.bin as object)).toContain('queueflow');
  });
});

describe('infra/redis.conf', () => {
  const text = readFileSync(path.join(INFRA, 'redis.conf'), 'utf8');
  const lines = text.split('\n');
  const directives = new Map<string, string>();
  lines.forEach((line, i) => {
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const [key, ...value] = line.trim().split(/\s+/);
    directives.set(key!, value.join(' '));
    expect(lines[i - 1]?.trimStart().startsWith('#'), `a comment explains \`${line}\``).toBe(true);
  });

  it('has the production settings: AOF fsynced every second, no eviction', () => {
    expect(directives.get('appendonly')).toBe('yes');
    expect(directives.get('appendfsync')).toBe('everysec');
    expect(directives.get('maxmemory-policy')).toBe('noeviction');
    expect(text).toMatch(/appendfsync always/); // and says what `always` buys
  });

  const redisServer = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).status === 0;
  it.skipIf(!redisServer)('is loaded by redis-server with those settings', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'queueflow-conf-'));
    // The conf's `dir` (/data) and `bind` are the container's: here a temp dir and the loopback.
    const conf = path.join(dir, 'redis.conf');
    writeFileSync(conf, text.replace(/^dir \/data$/m, `dir ${dir}`));
    const server = await startRedisServerWithConf(conf, dir);
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      const get = async (name: string): Promise<string | undefined> =>
        ((await redis.config('GET', name)) as string[])[1];
      expect(await get('appendonly')).toBe('yes');
      expect(await get('appendfsync')).toBe('everysec');
      expect(await get('maxmemory-policy')).toBe('noeviction');
      expect(await get('timeout')).toBe('0');
    } finally {
      redis.disconnect();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** redis-server with `conf`, on a free local port and `dir`. */
async function startRedisServerWithConf(
  conf: string,
  dir: string,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn('redis-server', [conf, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (error) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`redis-server ${conf} did not start: ${(error as Error).message}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      probe.disconnect();
    }
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

describe('infra/Dockerfile', () => {
  const text = readFileSync(path.join(INFRA, 'Dockerfile'), 'utf8');
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
  const stages = instructions.filter((i) => i.op === 'FROM');

  it('is multi-stage on a Node version the workspace accepts', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0]!.args).toMatch(/ AS build$/i);
    const nodeVersion = Number(/ARG NODE_VERSION=(\d+)/.exec(text)?.[1]);
    expect(nodeVersion).toBeGreaterThanOrEqual(Number(/>=(\d+)/.exec(rootPackage.engines.node as string)?.[1]));
    expect(stages.every((s) => s.args.startsWith('node:${NODE_VERSION}'))).toBe(true);
  });

  it('copies files that exist in the build context (the repository root)', () => {
    const copies = instructions.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.args.split(/\s+/);
      for (const source of parts.slice(0, -1)) expect(existsSync(path.join(ROOT, source)), `COPY ${source}`).toBe(true);
    }
    // every workspace's manifest, so that npm ci matches the lockfile
    for (const workspace of rootPackage.workspaces as string[])
      expect(text).toContain(`COPY ${workspace}/package.json ${workspace}/`);
  });

  it('installs with npm ci and runs npm scripts that exist', () => {
    const runs = instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    const scripts = runs.flatMap((r) => [...r.matchAll(/npm run (\S+)( --workspaces)?/g)]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, script, workspaces] of scripts) {
      if (workspaces) {
        for (const pkg of ['runtime', 'worker', 'examples']) {
          expect(
            readJson(`packages/${pkg}/package.json`).scripts,
            `@queueflow/${pkg} has a ${script} script`,
          ).toHaveProperty(script!);
        }
      } else {
        expect(rootPackage.scripts).toHaveProperty(script!);
      }
    }
  });

  it('ships the compiled packages the command needs, and runs the worker as a non-root user', () => {
    const fromBuild = instructions
      .filter((i) => i.op === 'COPY' && i.args.startsWith('--from=build'))
      .map((i) => i.args.split(/\s+/)[1]!);
    for (const pkg of ['runtime', 'worker', 'examples']) {
      expect(fromBuild).toContain(`/app/packages/${pkg}/package.json`);
      expect(fromBuild).toContain(`/app/packages/${pkg}/dist`);
      expect(fromBuild).toContain(`/app/packages/${pkg}/node_modules`); // what npm could not hoist
      expect(text).toContain(`packages/${pkg}/node_modules`); // made to exist in the build stage
    }
    expect(fromBuild).toContain('/app/node_modules');
    expect(instructions.find((i) => i.op === 'USER')?.args).toBe('node');
  });

  it('starts `queueflow worker` with the flows module (exec form)', () => {
    const cmd = instructions.filter((i) => i.op === 'CMD').at(-1)!;
    expectWorkerCommand(JSON.parse(cmd.args) as string[], 'Dockerfile CMD');
  });

  it('keeps node_modules and build output out of the context', () => {
    const ignore = readFileSync(path.join(INFRA, 'Dockerfile.dockerignore'), 'utf8');
    expect(ignore).toMatch(/^\*\*\/node_modules$/m);
    expect(ignore).toMatch(/^\*\*\/dist$/m);
  });
});

describe('infra/docker-compose.yml', () => {
  const compose = parse(readFileSync(path.join(INFRA, 'docker-compose.yml'), 'utf8')) as Json;
  const { redis, worker } = compose.services as Json;

  it('runs Redis with infra/redis.conf and keeps its data in a volume at the conf dir', () => {
    expect(redis.image).toMatch(/^redis:7/);
    const confMount = (redis.volumes as string[]).find((v) => v.startsWith('./redis.conf:'))!;
    expect(existsSync(path.join(INFRA, 'redis.conf'))).toBe(true);
    const target = confMount.split(':')[1]!;
    expect(redis.command).toContain(target);
    const dataMount = (redis.volumes as string[]).find((v) => v.endsWith(':/data'))!;
    expect(compose.volumes).toHaveProperty(dataMount.split(':')[0]!);
    expect(readFileSync(path.join(INFRA, 'redis.conf'), 'utf8')).toMatch(/^dir \/data$/m);
  });

  it('builds the worker from infra/Dockerfile with the repository root as context', () => {
    expect(path.resolve(INFRA, worker.build.context as string)).toBe(path.resolve(ROOT));
    expect(existsSync(path.join(ROOT, worker.build.dockerfile as string))).toBe(true);
    if (worker.command) expectWorkerCommand(worker.command as string[], 'compose worker command');
  });

  it('lets the worker scale (--scale worker=N): no container name, no published port', () => {
    expect(worker).not.toHaveProperty('container_name');
    expect(worker).not.toHaveProperty('ports');
  });

  it('gives the worker REDIS_URL, which the CLI reads, pointing at the compose Redis', () => {
    for (const name of Object.keys(worker.environment as object)) expect(cliEnvVars).toContain(name);
    const url = new URL(worker.environment.REDIS_URL as string);
    expect(url.protocol).toBe('redis:');
    expect(Object.keys(compose.services as object)).toContain(url.hostname);
    expect(worker.depends_on.redis.condition).toBe('service_healthy');
    expect(Number.parseInt(worker.stop_grace_period as string, 10)).toBeGreaterThan(30);
  });
});

describe('infra/k8s', () => {
  const docs = readdirSync(path.join(INFRA, 'k8s'))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(path.join(INFRA, 'k8s', f), 'utf8')).map((d) => d.toJS() as Json));
  const ofKind = (kind: string): Json[] => docs.filter((d) => d.kind === kind);
  const deployment = ofKind('Deployment')[0]!;
  const secret = ofKind('Secret')[0]!;
  const container = deployment.spec.template.spec.containers[0] as Json;
  const options = (): Map<string, string> =>
    expectWorkerCommand([...(container.command as string[]), ...(container.args as string[])], 'Deployment');

  it('parses, every document with a kind and a name', () => {
    expect(docs.length).toBeGreaterThanOrEqual(4);
    for (const doc of docs) expect(doc.metadata?.name, `${doc.kind}`).toBeTruthy();
    expect(ofKind('ScaledObject')).toHaveLength(1);
    expect(ofKind('TriggerAuthentication')).toHaveLength(1);
  });

  it('runs `queueflow worker` with the flows module in the Deployment', () => {
    options();
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
  });

  it('takes REDIS_URL, which the CLI reads, from the Secret', () => {
    const env = container.env as Json[];
    for (const { name } of env) expect(cliEnvVars).toContain(name);
    const redisUrl = env.find((e) => e.name === 'REDIS_URL')!;
    expect(redisUrl.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
    expect(secret.stringData).toHaveProperty(redisUrl.valueFrom.secretKeyRef.key as string);
    expect(new URL(secret.stringData.REDIS_URL as string).protocol).toMatch(/^rediss?:$/);
  });

  it('gives steps time to finish on SIGTERM and sets resources', () => {
    // Longer than the slowest step: the LLM summary's try times out after 30 s.
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(30);
    expect(container.resources.requests).toMatchObject({ cpu: expect.anything(), memory: expect.anything() });
    expect(container.resources.limits.memory).toBeTruthy();
    expect(deployment.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
  });

  it("scales the Deployment on BullMQ's wait list of the step queue under the workers' prefix", () => {
    const scaled = ofKind('ScaledObject')[0]!;
    expect(scaled.spec.scaleTargetRef.name).toBe(deployment.metadata.name);
    const trigger = (scaled.spec.triggers as Json[]).find((t) => t.type === 'redis')!;
    const prefix = options().get('--prefix') ?? helpDefault('--prefix')!;
    // The key BullMQ (the version @queueflow/worker uses) gives the wait list of queue `steps`.
    const requireFromWorker = createRequire(path.join(ROOT, 'packages/worker/package.json'));
    const { QueueKeys } = requireFromWorker('bullmq') as {
      QueueKeys: new (prefix: string) => { toKey(queue: string, type: string): string };
    };
    const waitList = new QueueKeys(prefix).toKey(new RedisKeys(prefix).stepQueue, 'wait');
    expect(waitList).toBe('{qf}:steps:wait');
    expect(trigger.metadata.listName).toBe(waitList);
    expect(Number(trigger.metadata.listLength)).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
  });

  it('authenticates KEDA with keys the Secret has', () => {
    const scaled = ofKind('ScaledObject')[0]!;
    const auth = ofKind('TriggerAuthentication')[0]!;
    const trigger = (scaled.spec.triggers as Json[])[0]!;
    expect(trigger.authenticationRef.name).toBe(auth.metadata.name);
    for (const ref of auth.spec.secretTargetRef as Json[]) {
      expect(ref.name).toBe(secret.metadata.name);
      expect(secret.stringData).toHaveProperty(ref.key as string);
      expect(['address', 'password', 'username', 'host', 'port']).toContain(ref.parameter);
    }
    // KEDA wants host:port, not a URL
    expect(secret.stringData.REDIS_ADDRESS).toMatch(/^[^:/]+:\d+$/);
    expect(new URL(secret.stringData.REDIS_URL as string).host).toBe(secret.stringData.REDIS_ADDRESS);
  });
});

describe('infra/grafana/queueflow-dashboard.json', () => {
  // The series `queueflow worker --metrics-port` serves (tests/cli/worker-logs-metrics.int.test.ts
  // reads some of them off a live worker), as Prometheus names them.
  const SERVED = [
    'queueflow_steps_started_total',
    'queueflow_steps_completed_total',
    'queueflow_steps_failed_total',
    'queueflow_step_duration_bucket',
    'queueflow_queue_depth',
    'queueflow_runs_parked',
    'queueflow_budget_waits_total',
    'queueflow_budget_in_use',
    'queueflow_budget_concurrency',
    'queueflow_budget_window_units',
    'queueflow_budget_rate_max',
    'queueflow_budget_waiting',
  ];

  it('parses, and each panel queries series the worker serves', () => {
    const dashboard = JSON.parse(readFileSync(path.join(INFRA, 'grafana', 'queueflow-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    expect(dashboard.panels.length).toBeGreaterThan(0);
    const used = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets) {
        // Series names, not the label names of `by (...)` and `{...}`.
        const series = expr.replace(/by \([^)]*\)|\{[^}]*\}/g, '');
        for (const [name] of series.matchAll(/queueflow_[a-z_]+/g)) used.add(name);
      }
    }
    for (const name of used) expect(SERVED, name).toContain(name);
    expect(used).toContain('queueflow_queue_depth');
    expect(used).toContain('queueflow_budget_in_use');
  });
});
