/**
 * The studio's Conversations page in chromium (issue 27), against a real Redis and a `queueflow
 * worker` process: a 3-agent conversation (studio-team.ts) drawn as a sequence diagram with its
 * ask and reply paired, a message's turn with its state diff, the scribe's wait on a person, the
 * spend against the budget, the person's question answered from the page, and a fork at a message
 * with a JSON Patch that the page then opens.
 */
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lead, scout, scribe } from './studio-team.js';
import { accessibilityProblems, startStudio, type StudioSetup } from './support/studio-harness.js';

let s: StudioSetup;
beforeAll(async () => {
  // Mailboxes are read every 2 s by default: the page's inbox follows faster here.
  s = await startStudio('studio-conversations', { live: { batchMs: 50, snapshotEveryMs: 300 } });
}, 60_000);
afterAll(() => s?.close());

const refs = [lead.ref('lead'), scout.ref('scout'), scribe.ref('scribe')];

it('draws a 3-agent conversation, shows a turn, waits and spend, answers the person and forks', async () => {
  const { page, engine } = s;
  const id = `talk-${nanoid(6)}`;
  const desk = `human:desk-${nanoid(6)}`;
  await engine.send(
    lead.ref('lead'),
    { topic: 'queues', desk },
    { conversation: { id, budget: { turns: 20, cost: { key: 'tokens', max: 100 } } } },
  );
  // lead asks scout, scout replies, lead sends to scribe, scribe asks the person and waits.
  await expect
    .poll(async () => (await engine.conversation(id))?.waits.map((wait) => wait.agent), { timeout: 20_000 })
    .toEqual([scribe.ref('scribe')]);

  await page.goto(`${s.url}/`);
  await page.getByRole('link', { name: 'Conversations' }).click();
  await page.waitForURL('**/conversations');
  await page.getByTestId('conversations-table').getByRole('link', { name: id }).click();
  await page.waitForURL(`**/conversations/${id}`);

  // One lane per agent (and the outside, and the person asked), the messages in order.
  const diagram = page.getByTestId('sequence-diagram');
  for (const ref of refs) await diagram.locator(`[data-lane="${ref}"]`).waitFor();
  await diagram.locator(`[data-lane="${desk}"]`).waitFor();
  const message = (n: number) => diagram.getByTestId(`message-${n}`);
  await message(4).waitFor();
  expect(await message(1).getAttribute('aria-label')).toBe('#1 message from outside to st-lead/lead');
  expect(await message(2).getAttribute('aria-label')).toBe(
    '#2 ask from st-lead/lead to st-scout/scout, answered by #3',
  );
  expect(await message(3).getAttribute('aria-label')).toBe('#3 reply from st-scout/scout to st-lead/lead, answers #2');
  expect(await message(4).getAttribute('aria-label')).toBe('#4 message from st-lead/lead to st-scribe/scribe');
  await diagram.getByTestId('sequence-pending-ask').waitFor(); // the scribe's question to the person

  // A message opens the turn that handled it, with what it changed in the agent's state.
  await message(2).click();
  const detail = page.getByTestId('message-detail');
  await detail.getByTestId('message-body').filter({ hasText: '{"topic":"queues"}' }).waitFor();
  await detail.getByTestId('step-diff').filter({ hasText: 'asked' }).waitFor();
  expect(new URL(page.url()).searchParams.get('message')).toBe('2');

  // The wait for the person, the spend against the budget, the person's question.
  await page
    .getByTestId('conversation-wait')
    .filter({ hasText: 'st-scribe/scribe' })
    .filter({ hasText: desk })
    .waitFor();
  await page.getByTestId('spent-tokens').filter({ hasText: '10 / 100' }).waitFor();
  await page.getByTestId('budget-turns').filter({ hasText: '3 of 20 turns' }).waitFor();
  const spend = page.getByTestId('conversation-spend');
  for (const ref of [lead.ref('lead'), scout.ref('scout')])
    await spend.locator(`tr[data-agent="${ref}"]`).filter({ hasText: '5' }).waitFor();
  const inbox = page.getByTestId('conversation-inbox');
  await inbox.filter({ hasText: 'Publish the draft on queues?' }).waitFor();
  await s.shot('conversation');
  expect(await accessibilityProblems(page)).toEqual([]);

  // Answered here, the scribe's turn ends (the answer, from outside any run, carries no
  // conversation: the record does not show it), and nobody waits.
  await inbox.getByRole('textbox').fill('"yes"');
  await inbox.getByRole('button', { name: 'Send answer' }).click();
  await page.getByTestId('spent-tokens').filter({ hasText: '15 / 100' }).waitFor();
  await page.getByText('No turn of this conversation is parked now.').waitFor();
  await page.getByTestId('conversation-inbox-empty').waitFor();
  expect((await engine.agent(scribe.ref('scribe')))?.state).toEqual({ drafts: 1, verdict: 'yes' });

  // Fork at the lead's message to the scribe, with the scribe's drafts patched.
  await page.getByTestId('fork-message-4').click();
  const dialog = page.getByRole('dialog', { name: 'Fork this conversation' });
  await dialog.getByTestId('fork-state').filter({ hasText: 'drafts' }).waitFor(); // the scribe's state there
  const editor = dialog.getByTestId('fork-patch').locator('.cm-content');
  await editor.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.insertText('[{ "op": "replace", "path": "/drafts", "value": 41 }]');
  await dialog.getByTestId('fork-patch-ops').filter({ hasText: 'replace /drafts = 41' }).waitFor();
  await s.shot('conversation-fork-dialog');
  expect(await accessibilityProblems(page)).toEqual([]);
  await dialog.getByRole('button', { name: 'Start the fork' }).click();
  await page.waitForURL((url) => url.pathname.startsWith(`/conversations/${id}~`));
  const forkId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  await page.getByTestId('conversation-id').filter({ hasText: forkId }).waitFor();

  // The scribe's copy got the message again and asks the person again, in the fork.
  const fork = (await engine.conversation(forkId))!;
  const copy = fork.participants[0] ?? '';
  expect(copy).toMatch(/^agent:st-scribe\/scribe~/);
  await page.getByTestId('conversation-inbox').filter({ hasText: 'Publish the draft on queues?' }).waitFor();
  await page.getByTestId('conversation-inbox').getByRole('textbox').fill('"no"');
  await page.getByTestId('conversation-inbox').getByRole('button', { name: 'Send answer' }).click();
  await expect
    .poll(async () => (await engine.agent(copy))?.state, { timeout: 20_000 })
    .toEqual({ drafts: 42, verdict: 'no' });
  await message(1).click();
  await page.getByTestId('message-detail').getByTestId('step-diff').filter({ hasText: '42' }).waitFor();
  await s.shot('conversation-forked');
  // The original is untouched.
  expect((await engine.agent(scribe.ref('scribe')))?.state).toEqual({ drafts: 1, verdict: 'yes' });
  expect(s.pageErrors).toEqual([]);
});

it('checks what the conversation routes get', async () => {
  const get = (path: string) => fetch(`${s.url}${path}`);
  const post = (path: string, body: unknown) =>
    fetch(`${s.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  expect((await get('/api/conversation?id=')).status).toBe(400);
  const missing = await get('/api/conversation?id=nobody-here');
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({ error: { code: 'CONVERSATION_NOT_FOUND' } });
  expect((await get('/api/conversations?limit=0')).status).toBe(400);
  expect((await get('/api/conversation/turn?run=no%20run')).status).toBe(400);
  const badPatch = await post('/api/conversation/fork', { id: 'x', atMessage: 'm', patch: { op: 'add' } });
  expect(badPatch.status).toBe(400);
  expect(await badPatch.json()).toMatchObject({ error: { message: expect.stringContaining('`patch`') as unknown } });
  const unknown = await post('/api/conversation/fork', { id: 'nobody-here', atMessage: 'm' });
  expect(unknown.status).toBe(400); // the engine's INVALID_OPTION: no such conversation
});
