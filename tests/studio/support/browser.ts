/**
 * Debian's chromium driven by playwright-core, for the studio's browser tests: headless, no
 * sandbox (tests run as root in CI), nothing that reaches the network on its own, and a fresh
 * profile per launch (deleted on close).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Where Debian's package puts it; `CHROMIUM_PATH` overrides. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches chromium with a profile of its own, a laptop-sized window. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no chromium at ${CHROMIUM}: install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH`);
  const profile = mkdtempSync(join(tmpdir(), 'qf-studio-chromium-'));
  // Playwright sets --user-data-dir itself from this argument (it refuses it among `args`).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1366, height: 900 },
    deviceScaleFactor: 1,
    timeout: 30_000,
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
