/**
 * queueflow used as a new user would, outside this repository: the two packages packed with
 * `npm pack`, installed from the tarballs into a fresh folder under the OS temp folder, a project
 * written by their `queueflow init`, and its flow run embedded (`npm run dev`), on a worker
 * loading `flows.ts` (through tsx), and on a worker loading the compiled `dist/flows.js`, each
 * against the suite's Redis under a prefix of its own.
 *
 * Installs use `--prefer-offline` (the npm cache is warm after `npm ci`) and get generous
 * deadlines; every failure prints the command's output.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCommand, type CliOutput } from '../support/cli-process.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(path.join(ROOT, 'packages/worker/package.json'), 'utf8')) as { version: string }
).version;
const INSTALL_DEADLINE_MS = 180_000;
const DEADLINE_MS = 60_000;

/**
 * The environment of every command: this one's without npm's `npm_*` variables (this suite may
 * run under `npm test`, whose settings must not leak into the project's own npm) and REDIS_URL.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'REDIS_URL' && key !== 'INIT_CWD'),
  );
  return { ...env, NODE_NO_WARNINGS: '1', npm_config_audit: 'false', npm_config_fund: 'false' };
}

/** Runs a command to its end in `cwd`; throws with its output unless it exits 0. */
async function run(command: string, args: string[], cwd: string, timeoutMs = DEADLINE_MS): Promise<CliOutput> {
  const out = await startCommand(command, args, { cwd, env: cleanEnv(), timeoutMs }).exited;
  if (out.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${out.code}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`,
    );
  }
  return out;
}

/** The files a tarball holds, without npm's leading `package/`. */
async function tarballFiles(tarball: string): Promise<string[]> {
  const out = await run('tar', ['-tzf', tarball], path.dirname(tarball));
  return out.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace(/^package\//, ''));
}

describe('a project of its own: packed packages, queueflow init, embedded and on workers', () => {
  const home = mkdtempSync(path.join(tmpdir(), 'queueflow-starter-')); // outside the repository
  const tarballs = path.join(home, 'tarballs');
  const tools = path.join(home, 'tools');
  const app = path.join(home, 'my-app');
  const prefixes: string[] = [];
  let runtimeTgz = '';
  let workerTgz = '';

  beforeAll(async () => {
    mkdirSync(tarballs);
    const packed = await run(
      'npm',
      ['pack', '--json', '--pack-destination', tarballs, '-w', '@queueflow/runtime', '-w', '@queueflow/worker'],
      ROOT,
    );
    const files = (JSON.parse(packed.stdout) as { filename: string }[]).map((entry) => entry.filename);
    runtimeTgz = path.join(
      tarballs,
      files.find((file) => file.includes('runtime'))!,
    );
    workerTgz = path.join(
      tarballs,
      files.find((file) => file.includes('worker'))!,
    );

    // The tarballs installed into a folder of their own give the `queueflow` command to run init with.
    mkdirSync(tools);
    await run('npm', ['init', '-y'], tools);
    await run('npm', ['install', '--prefer-offline', runtimeTgz, workerTgz], tools, INSTALL_DEADLINE_MS);
    await run(path.join(tools, 'node_modules/.bin/queueflow'), ['init', app], tools);
    // The project's own install: its dependencies, the two packages from the tarballs.
    await run('npm', ['install', '--prefer-offline', runtimeTgz, workerTgz], app, INSTALL_DEADLINE_MS);
  }, 600_000);

  afterAll(async () => {
    await Promise.all(prefixes.map((prefix) => deletePrefix(redisUrl(), prefix)));
    rmSync(home, { recursive: true, force: true });
  });

  it('packs each package with its build, types, README and LICENSE, and no sources, tests or maps', async () => {
    expect(path.basename(runtimeTgz)).toBe(`queueflow-runtime-${VERSION}.tgz`);
    expect(path.basename(workerTgz)).toBe(`queueflow-worker-${VERSION}.tgz`);
    const runtime = await tarballFiles(runtimeTgz);
    const worker = await tarballFiles(workerTgz);
    expect(runtime).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts']),
    );
    expect(worker).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'bin/queueflow.js',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/cli.js',
        'dist/lua/commit-step.lua',
        'template/flows.ts',
        'template/gitignore',
      ]),
    );
    for (const file of [...runtime, ...worker]) {
      expect(file).toMatch(/^(package\.json|README\.md|LICENSE|dist\/|bin\/|template\/)/);
      expect(file).not.toMatch(/\.map$|\.test\.|^src\//);
    }
  });

  it('init wrote an ESM project depending on this version, with the documented scripts', () => {
    const manifest = JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')) as {
      type: string;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(manifest.type).toBe('module');
    expect(manifest.scripts).toMatchObject({
      dev: 'tsx dev.ts',
      worker: 'queueflow worker --flows flows.ts',
      start: 'tsx start.ts',
      build: 'tsc',
    });
    // npm install <tarball> replaced the versions init wrote with the tarballs.
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['@queueflow/runtime', '@queueflow/worker']);
    const installed = JSON.parse(
      readFileSync(path.join(app, 'node_modules/@queueflow/worker/package.json'), 'utf8'),
    ) as { version: string };
    expect(installed.version).toBe(VERSION);
  });

  it('npm run dev runs the flow embedded', async () => {
    const out = await run('npm', ['run', '-s', 'dev', '--', 'Ada'], app);
    // The last node's post returns no action: the flow's last action is undefined, left out of the JSON.
    expect(JSON.parse(out.stdout)).toEqual({ shared: { name: 'Ada', greeting: 'Hello, Ada!', shout: 'HELLO, ADA!' } });
  });

  it.each([
    ['flows.ts (through tsx)', 'flows.ts', false],
    ['compiled dist/flows.js (tsc)', 'dist/flows.js', true],
  ])('a worker with --flows %s runs a run started by the project on Redis', async (_label, flows, compiled) => {
    if (compiled) await run('npm', ['run', '-s', 'build'], app, INSTALL_DEADLINE_MS);
    const prefix = testPrefix('starter');
    prefixes.push(prefix);
    const redis = ['--redis', redisUrl(), '--prefix', prefix];
    // `npm run worker` is `queueflow worker --flows flows.ts`: the same command, with the test's Redis.
    const worker = startCommand(path.join(app, 'node_modules/.bin/queueflow'), ['worker', '--flows', flows, ...redis], {
      cwd: app,
      env: cleanEnv(),
      timeoutMs: 2 * DEADLINE_MS,
    });
    let failed = true;
    try {
      // `npm start` (start.ts through tsx), or the compiled start.js
      const out = compiled
        ? await run(process.execPath, ['dist/start.js', ...redis, '--name', 'Bo'], app)
        : await run('npm', ['run', '-s', 'start', '--', ...redis, '--name', 'Bo'], app);
      expect(JSON.parse(out.stdout)).toMatchObject({
        status: 'completed',
        shared: { name: 'Bo', greeting: 'Hello, Bo!', shout: 'HELLO, BO!' },
      });
      expect(worker.output().stdout).toMatch(
        /: ready on redis:\/\/.* \(prefix '.*'; partitions: 1, all served; queues: default; flows: hello; concurrency 8\)/,
      );
      failed = false;
    } finally {
      worker.signal('SIGTERM');
      const stopped = await worker.exited;
      // After a failure above, that failure is the one to report, not how the worker stopped.
      if (!failed) expect(stopped.code, `worker output:\n${stopped.stdout}\n${stopped.stderr}`).toBe(0);
    }
  });
});
