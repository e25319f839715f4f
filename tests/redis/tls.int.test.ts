/**
 * DESIGN "Redis": `rediss://` works. A redis-server that speaks TLS only, with a certificate from
 * a test CA that clients trust through NODE_EXTRA_CA_CERTS (as a user would trust a private CA):
 * a `queueflow worker` and `queueflow run` given only the `rediss://` URL complete a run.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScript } from '../support/cli-process.js';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { compiledModule } from '../support/compiled-module.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));
const FLOWS = compiledModule(fileURLToPath(new URL('../cli/cli-flows.ts', import.meta.url)));

/** A CA and a server certificate for 127.0.0.1 signed by it, in `dir`. */
function makeCertificates(dir: string): { caFile: string; certFile: string; keyFile: string } {
  const file = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=queueflow test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  );
  writeFileSync(file('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-days',
    '1',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-extfile',
    file('san.ext'),
    '-out',
    file('server.crt'),
  );
  return { caFile: file('ca.crt'), certFile: file('server.crt'), keyFile: file('server.key') };
}

describe('Redis over TLS (rediss://)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'queueflow-tls-'));
  const prefix = testPrefix('tls');
  let server: LocalRedisServer;
  let worker: WorkerProcess | undefined;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const tls = makeCertificates(dir);
    server = await startRedisServer({ tls });
    env = { NODE_EXTRA_CA_CERTS: tls.caFile };
  }, 120_000);

  afterAll(async () => {
    await stopWorkers(worker ? [worker] : []);
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a worker and a client given only the rediss:// URL complete a run', async () => {
    expect(server.url).toMatch(/^rediss:\/\/127\.0\.0\.1:\d+$/);
    worker = await spawnWorker({ flows: FLOWS, redisUrl: server.url, prefix, env });
    const args = [
      'run',
      'cli-greet',
      '--flows',
      FLOWS,
      '--redis',
      server.url,
      '--prefix',
      prefix,
      '--shared',
      '{"name":"Tess"}',
      '--params',
      '{"greeting":"Hello"}',
    ];
    const out = await startScript(CLI, args, {
      env: { ...process.env, NODE_NO_WARNINGS: '1', ...env },
      timeoutMs: 60_000,
    }).exited;
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({
      status: 'completed',
      shared: { name: 'Tess', text: 'Hello, Tess!' },
    });
  }, 120_000);

  it('a client that does not trust the certificate is refused with the TLS reason', async () => {
    const out = await startScript(CLI, ['status', 'some-run', '--redis', server.url, '--prefix', prefix], {
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      timeoutMs: 60_000,
    }).exited;
    expect(out).toEqual({
      code: 1,
      stdout: '',
      stderr: `queueflow: cannot connect to Redis at ${server.url}: self-signed certificate in certificate chain\n`,
    });
  });
});
