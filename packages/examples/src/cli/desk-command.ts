import { LocalEngine, type Engine } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { deskAgents, scriptedReviewer } from '../desk/desk-agents.js';
import { readCorpusMails } from '../desk/desk-mail.js';
import { DESK_SAMPLE_SIZE, deskSample } from '../desk/desk-sample.js';
import { formatDeskReport, writeDeskFiles } from '../desk/desk-report.js';
import { checkFreshEngine, runDesk, type DeskOptions } from '../desk/run-desk.js';
import { mockLines, type LlmSetup } from './llm-option.js';
import { createProgressBar } from './progress-bar.js';
import { serveStudio } from './serve-studio.js';
import { redactUrl } from './redact-url.js';
import { resolveUserPath } from './user-path.js';

/** Turns a mail's conversation may take: its triage, thread, sender, list and moderator turns, with room. */
const TURN_BUDGET = 8;

export interface DeskCommandOptions {
  /** Mails to replay (see {@link deskSample}); `undefined`: {@link DESK_SAMPLE_SIZE}. */
  limit?: number | undefined;
  all?: boolean | undefined;
  /** Run on the workers of this Redis instead of embedded. */
  redis?: string | undefined;
  /** Run on the workers of this Redis Cluster (its startup node URLs) instead of embedded. */
  cluster?: string[] | undefined;
  prefix: string;
  progress: boolean;
  /** Mails triaged at once. */
  concurrency?: number | undefined;
  /** Where the files go (relative: from where the user ran npm). @defaultValue 'out/desk' */
  out?: string | undefined;
  /**
   * Serve queueflow studio for the (embedded) engine on this port of 127.0.0.1 (0: any free
   * port): the agents and conversations can be watched live, and a person answers the moderator
   * in its ask inbox instead of the scripted reviewer. It stays open after the report until Ctrl-C.
   */
  studioPort?: number | undefined;
  /** `--llm [mock]` (see `setUpLlm`): thread summaries from the model; the mock is closed at the end. */
  llm?: LlmSetup | undefined;
}

/**
 * `npm start -- --desk`: replays the corpus in date order as a mail stream into the desk's agents,
 * embedded (LocalEngine, with `--studio` served for it) or on the workers of `--redis` or
 * `--cluster`, then
 * prints the report and writes the agents' final states under `out/desk/`.
 */
export async function runDeskCommand(options: DeskCommandOptions): Promise<void> {
  const redis = options.cluster ? undefined : options.redis;
  const distributed = redis !== undefined || options.cluster !== undefined;
  const where = options.cluster
    ? `the Redis Cluster ${options.cluster.map(redactUrl).join(',')}`
    : redis === undefined
      ? ''
      : redactUrl(redis);
  const engine: Engine | RedisEngine = distributed
    ? new RedisEngine({
        connection: options.cluster ? { cluster: options.cluster } : redis!,
        prefix: options.prefix,
        flows: [scriptedReviewer],
        agents: deskAgents,
      })
    : new LocalEngine({ flows: [scriptedReviewer], agents: deskAgents });
  let partitions: DeskOptions['partitions'];
  try {
    await checkFreshEngine(engine);
    if (distributed && (await engine.workers()).length === 0)
      throw new Error(
        `no queueflow worker serves ${where} with prefix ${options.prefix}: start one (or more) with ` +
          `npx queueflow worker --flows packages/examples/dist/flows.js ${options.cluster ? '--cluster <urls>' : '--redis <url>'} --prefix '${options.prefix}'`,
      );
    if (engine instanceof RedisEngine) partitions = await engine.deploymentPartitions();
  } catch (error) {
    await engine.close();
    throw error;
  }
  const studio =
    options.studioPort === undefined
      ? undefined
      : await serveStudio(engine, options.studioPort).catch(async (error: unknown) => {
          await engine.close();
          throw error;
        });
  if (studio)
    console.error(
      `queueflow studio: ${studio.url} (Agents, Conversations; the moderator's questions wait in Mailboxes for you to answer)`,
    );
  const mails = await readCorpusMails();
  const selected = options.all ? mails : deskSample(mails, options.limit ?? DESK_SAMPLE_SIZE);
  const inFlight = options.concurrency ?? (distributed ? 64 : 16);
  console.error(
    `queueflow mail desk: ${selected.length} of the corpus's ${mails.length} dated mails in date order${options.all ? '' : ' from August 2002 (--all: every one)'}, ` +
      `${distributed ? `on queueflow workers (${where}, prefix ${options.prefix}${partitions && partitions.count > 1 ? `, ${partitions.count} partitions` : ''})` : 'embedded'}, ${inFlight} mails in flight`,
  );
  const bar = createProgressBar(selected.length, options.progress, { many: 'mails triaged', short: 'mails' });
  try {
    const result = await runDesk(engine, selected, {
      inFlight,
      turnBudget: TURN_BUDGET,
      onProgress: (done, total) => bar.update(done, total),
      ...(partitions ? { partitions } : {}),
      ...(studio ? { reviewer: 'person' as const } : {}),
      ...(options.llm?.enabled ? { llmSummary: true } : {}),
    });
    bar.stop();
    const files = await writeDeskFiles(result, resolveUserPath(options.out ?? 'out/desk'));
    console.log(
      formatDeskReport(result, {
        title: `queueflow mail desk (${options.cluster ? 'distributed, Redis Cluster' : distributed ? 'distributed' : 'embedded'})`,
        files,
        ...(options.llm?.enabled ? { lines: options.llm.mock ? mockLines(options.llm.mock) : [] } : {}),
      }),
    );
    if (studio) {
      console.error(`queueflow studio stays open at ${studio.url}: Ctrl-C closes it`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
  } finally {
    bar.stop();
    await studio?.close();
    await engine.close();
    await options.llm?.mock?.close();
  }
}
