/**
 * The README's picture of the mail desk in the studio (issue 28): runs the desk embedded on 200
 * corpus mails with queueflow studio served for its engine, then opens in chromium the
 * Conversations page of the mail whose conversation took the most turns, and saves it as
 * tests/studio/__screenshots__/desk-conversation.png.
 *
 * Usage: npm run screenshot:desk -w @queueflow/tests   (needs Debian's chromium; no Redis)
 */
import { fileURLToPath } from 'node:url';
import { LocalEngine } from '@queueflow/runtime';
import { createStudioHandler } from '@queueflow/worker';
import { createServer } from 'node:http';
import { deskAgents, deskSample, readCorpusMails, runDesk, scriptedReviewer } from '@queueflow/examples';
import { launchBrowser } from '../studio/support/browser.js';

const OUT = fileURLToPath(new URL('../studio/__screenshots__/desk-conversation.png', import.meta.url));

const engine = new LocalEngine({ flows: [scriptedReviewer], agents: deskAgents });
const studio = createStudioHandler({ engine });
const server = createServer(studio);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
const browser = await launchBrowser();
try {
  const mails = deskSample(await readCorpusMails(), 200);
  await runDesk(engine, mails, { inFlight: 16, turnBudget: 8 });
  let busiest = { id: '', turns: 0 };
  for (const mail of mails) {
    const conversation = await engine.conversation(mail.docId);
    if (conversation && conversation.turns > busiest.turns)
      busiest = { id: conversation.id, turns: conversation.turns };
  }
  const page = await browser.context.newPage();
  await page.goto(`${url}/conversations/${encodeURIComponent(busiest.id)}?message=2`);
  await page.getByRole('heading', { name: /changed in the state of/ }).waitFor({ timeout: 30_000 });
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`${OUT}: conversation '${busiest.id}' (${busiest.turns} turns)`);
} finally {
  await browser.close();
  await studio.close();
  server.closeAllConnections();
  server.close();
  await engine.close();
}
