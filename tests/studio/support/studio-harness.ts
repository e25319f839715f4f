/**
 * A studio for a browser test: `queueflow worker` processes and a RedisEngine client on a key
 * prefix of the test's own, the studio handler over that engine on a free port, and chromium with
 * one page. `shot(name)` renders a full-page screenshot, and writes it to
 * `tests/studio/__screenshots__/<name>.png` only when `QF_SCREENSHOTS=1` (`npm run screenshots -w
 * @queueflow/tests`): the files are the README's pictures, and a test run must not rewrite them.
 */
import { mkdirSync } from 'node:fs';
import axe from 'axe-core';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { setWarningHandler, type Engine } from '@queueflow/runtime';
import { createStudioHandler, RedisEngine, type StudioHandler, type StudioHandlerOptions } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../../support/worker-process.js';
import { studioAgents, studioFlows } from '../studio-flows.js';
import { launchBrowser, type Browser } from './browser.js';

export const STUDIO_FLOWS = fileURLToPath(new URL('../studio-flows.ts', import.meta.url));
const SCREENSHOTS = fileURLToPath(new URL('../__screenshots__/', import.meta.url));
/** Whether `shot` writes its file (see the module's comment). */
const WRITE_SCREENSHOTS = process.env.QF_SCREENSHOTS === '1';

/**
 * The accessibility problems axe-core finds on the page as it is now (WCAG 2 A and AA rules),
 * one line each. The JSON tree is left out: its markup is vanilla-jsoneditor's (axe reports its
 * tree items for lacking a `group` parent).
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(axe.source); // evaluated over the debugging protocol: the page's CSP does not apply
  const violations = await page.evaluate(async () => {
    type Result = { violations: { id: string; impact: string; nodes: { target: string[] }[] }[] };
    const inPage = (globalThis as unknown as { axe: { run(context: unknown, options: unknown): Promise<Result> } }).axe;
    const result = await inPage.run(
      { exclude: [['.json-box']] },
      { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] },
    );
    return result.violations.map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  return violations;
}

export interface StudioSetup {
  /** The studio's URL, without a trailing slash. */
  url: string;
  prefix: string;
  engine: RedisEngine;
  workers: WorkerProcess[];
  browser: Browser;
  page: Page;
  /** Errors the page threw (a test ends by checking there were none). */
  pageErrors: string[];
  /** Renders a full-page screenshot; writes it to `__screenshots__/<name>.png` when `QF_SCREENSHOTS=1`. */
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

export interface StudioSetupOptions extends Partial<Omit<StudioHandlerOptions, 'engine'>> {
  /** Worker processes to start. @defaultValue 1 */
  workers?: number;
}

/** Starts the studio on a served engine. */
export async function serveStudio(
  engine: Engine,
  options: Partial<StudioHandlerOptions> = {},
): Promise<{ url: string; handler: StudioHandler; close(): Promise<void> }> {
  const handler = createStudioHandler({ engine, ...options });
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}${options.basePath ?? ''}`,
    handler,
    close: async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Opens a page that records its errors, and a screenshot helper. */
export async function openPage(
  browser: Browser,
): Promise<{ page: Page; pageErrors: string[]; shot(name: string): Promise<void> }> {
  const page = await browser.context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.setDefaultTimeout(15_000);
  if (WRITE_SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    page,
    pageErrors,
    shot: async (name) => {
      // Rendered either way: a page that cannot be captured fails the test.
      await page.screenshot({ fullPage: true, ...(WRITE_SCREENSHOTS ? { path: `${SCREENSHOTS}${name}.png` } : {}) });
    },
  };
}

/** Workers, engine, studio and browser for one test file (`name` names its key prefix). */
export async function startStudio(name: string, options: StudioSetupOptions = {}): Promise<StudioSetup> {
  setWarningHandler(() => {});
  const prefix = testPrefix(name);
  const url = redisUrl();
  const workers: WorkerProcess[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const { workers: count = 1, ...handlerOptions } = options;
    const started = await Promise.all(
      Array.from({ length: count }, () => spawnWorker({ flows: STUDIO_FLOWS, redisUrl: url, prefix, concurrency: 8 })),
    );
    workers.push(...started);
    closers.push(() => stopWorkers(workers));
    const engine = new RedisEngine({ connection: url, flows: studioFlows, agents: studioAgents, prefix });
    closers.push(() => engine.close());
    const studio = await serveStudio(engine, { live: { batchMs: 50 }, ...handlerOptions });
    closers.push(() => studio.close());
    const browser = await launchBrowser();
    closers.push(() => browser.close());
    const { page, pageErrors, shot } = await openPage(browser);
    return {
      url: studio.url,
      prefix,
      engine,
      workers,
      browser,
      page,
      pageErrors,
      shot,
      close: async () => {
        for (const close of closers.reverse()) await close().catch(() => {});
        await deletePrefix(url, prefix);
        setWarningHandler(null);
      },
    };
  } catch (error) {
    for (const close of closers.reverse()) await close().catch(() => {});
    await deletePrefix(url, prefix);
    throw error;
  }
}
