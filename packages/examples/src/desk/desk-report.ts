import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { writeJsonl } from '../report/jsonl.js';
import { reputationOf, type SenderState } from './desk-agents.js';
import type { DeskResult, KeyedState } from './run-desk.js';

/** The files a desk run writes under its folder, by what they hold. */
export interface DeskFiles {
  threads: string;
  senders: string;
  lists: string;
  digests: string;
  moderator: string;
}

/**
 * Writes the final states under `dir`: `threads.jsonl`, `senders.jsonl` and `lists.jsonl` (one
 * agent a line: its key, then its state), `digests.md` (each list's last digest) and
 * `moderator.json` (the moderator's verdicts).
 */
export async function writeDeskFiles(result: DeskResult, dir: string): Promise<DeskFiles> {
  const files: DeskFiles = {
    threads: path.join(dir, 'threads.jsonl'),
    senders: path.join(dir, 'senders.jsonl'),
    lists: path.join(dir, 'lists.jsonl'),
    digests: path.join(dir, 'digests.md'),
    moderator: path.join(dir, 'moderator.json'),
  };
  const lines = <S>(states: KeyedState<S>[]) => states.map(({ key, state }) => ({ key, ...state }));
  await writeJsonl(files.threads, lines(result.threads));
  await writeJsonl(files.senders, lines(result.senders));
  await writeJsonl(files.lists, lines(result.lists));
  const digests = result.lists
    .filter(({ state }) => state.lastDigest !== null)
    .map(({ key, state }) =>
      [
        `## ${key}: digest ${state.lastDigest!.number} of ${state.digests}`,
        '',
        ...state.lastDigest!.mails.map(
          (mail) => `- ${new Date(mail.at).toISOString().slice(0, 10)} ${mail.from}: ${mail.subject}`,
        ),
        '',
      ].join('\n'),
    );
  await writeFile(files.digests, `# Mail desk digests (the last of each list)\n\n${digests.join('\n')}`);
  await writeFile(files.moderator, `${JSON.stringify(result.moderator ?? { asked: 0, verdicts: [] }, null, 2)}\n`);
  return files;
}

/** The percentile `p` (0 to 1) of sorted `values`, rounded. */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  return Math.round(values[Math.min(values.length - 1, Math.floor(p * values.length))]!);
}

/** How far a sender's reputation moved from where every sender starts (0.5), weighted by its mails. */
function moved(state: SenderState): number {
  return Math.abs(reputationOf(state) - 0.5) * Math.log2(1 + state.ham + state.spam);
}

/** The desk's report as text for a terminal. */
export function formatDeskReport(
  result: DeskResult,
  context: { title: string; files: DeskFiles; lines?: string[] },
): string {
  const rule = '─'.repeat(72);
  const triaged = result.ham + result.spam;
  const turns = Object.values(result.turns).reduce((a, b) => a + b, 0);
  const out = [rule, context.title, rule];
  out.push(
    `Mails            ${result.mails}  (ham ${result.ham}, spam ${result.spam}, skipped ${result.skipped.length})`,
    `Throughput       ${(triaged / result.triageSeconds).toFixed(1)} mails/s  (${result.triageSeconds.toFixed(1)} s to triage them; ` +
      `every agent idle after ${result.seconds.toFixed(1)} s, the lists' last digests written)`,
    `Agents           ${result.threads.length} threads, ${result.senders.length} senders, ${result.lists.length} lists, ` +
      `${result.moderator ? 'the moderator' : 'no moderator (no alert)'}; a triage agent per mail, dropped after its turn`,
    `Turns            ${turns}  (${Object.entries(result.turns)
      .map(([type, n]) => `${type.replace(/^desk-/, '')} ${n}`)
      .join(', ')})`,
    `Triage turns     p50 ${percentile(result.triageMs, 0.5)} ms, p99 ${percentile(result.triageMs, 0.99)} ms (send to reply)`,
    `Largest state    ${result.largestState.ref} (${result.largestState.bytes} bytes of JSON)`,
  );
  const cross = result.crossPartition;
  if (cross)
    out.push(
      `Cross-partition  ${cross.crossing} of the ${cross.messages} messages between agents went to another of the ` +
        `${cross.partitions} partitions (${Math.round((100 * cross.crossing) / Math.max(1, cross.messages))} %)`,
    );
  out.push('', 'Busiest threads');
  for (const { state } of [...result.threads]
    .sort((a, b) => b.state.count - a.state.count || (a.key < b.key ? -1 : 1))
    .slice(0, 5))
    out.push(
      `  ${String(state.count).padStart(4)} mails, ${state.participants.length} people  ${state.subject.slice(0, 60)}`,
      `        ${state.summary.slice(0, 140)}`,
    );
  if (context.lines) {
    // With --llm: which summariser wrote the threads' summaries.
    const sources = countBy(result.threads.map(({ state }) => state.summarySource ?? 'extractive'));
    out.push(
      '',
      `Thread summaries ${sources.replace('llm', 'by the model')} (a thread of one mail keeps its sentence)`,
      ...context.lines,
    );
  }
  out.push('', 'Senders whose reputation moved most (ham share, smoothed)');
  for (const { key, state } of [...result.senders]
    .sort((a, b) => moved(b.state) - moved(a.state) || (a.key < b.key ? -1 : 1))
    .slice(0, 5))
    out.push(`  ${reputationOf(state).toFixed(2)}  ${state.ham} ham, ${state.spam} spam  ${key}`);
  const digests = result.lists.reduce((sum, { state }) => sum + state.digests, 0);
  out.push(
    '',
    `Digests          ${digests} written by ${result.lists.filter(({ state }) => state.digests > 0).length} lists`,
  );
  const verdicts = result.moderator?.verdicts ?? [];
  out.push(
    `Moderator        ${verdicts.length} trusted sender(s) sent spam; the reviewer said: ${countBy(verdicts.map((v) => v.verdict))}`,
  );
  out.push(
    '',
    `Files            ${context.files.threads}`,
    `                 ${context.files.senders}`,
    `                 ${context.files.lists}`,
    `                 ${context.files.digests}`,
    `                 ${context.files.moderator}`,
    '',
  );
  return out.join('\n');
}

function countBy(values: string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts.size === 0 ? 'nothing' : [...counts].map(([value, n]) => `${n} ${value}`).join(', ');
}
