#!/usr/bin/env node
/**
 * The document pipeline's command line: `npm start` at the repository root, or
 * `npm run pipeline -w @queueflow/examples -- [options]`. Embedded by default; with `--redis URL`
 * the same run goes to the workers started with `queueflow worker` on that Redis. The options are
 * checked before the pipeline, the engines and the model client load: a wrong one fails at once.
 */
import { existsSync, statSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_PIPELINE_PARAMS,
  type DocumentSelection,
  type PipelineParams,
} from '../documents/types.js';
import { writeJsonl } from '../report/jsonl.js';
import { formatReport } from '../report/format-report.js';
import { buildReport } from '../report/pipeline-report.js';
import { expandSelection } from '../utils/document-selection.js';
import { DEFAULT_SAMPLE_SIZE, listCorpus } from '../utils/spam-assassin-corpus.js';
import { checkPrefixNeedsRedis, keyPrefix } from './prefix-option.js';
import { DESK_SAMPLE_SIZE } from '../desk/desk-sample.js';
import { runCommand } from './run-command.js';
import type { RunnerResult } from './run-embedded.js';
import { resolveUserPath } from './user-path.js';

interface CliOptions {
  all?: boolean;
  limit?: number;
  input?: string;
  out: string;
  concurrency?: number;
  maxBytes: number;
  llm?: boolean | string;
  progress: boolean;
  slowest: number;
  redis?: string;
  prefix: string;
  studio?: boolean;
  studioPort: number;
  desk?: boolean;
  cluster?: string[];
}

/** Documents in flight by default with `--redis`: enough to keep several workers' slots busy. */
const DEFAULT_DISTRIBUTED_CONCURRENCY = 64;

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError(`expected an integer from 1 and up, got '${value}'`);
  }
  return parsed;
}

const program = new Command()
  .name('pipeline')
  .description(
    'Parse, clean, analyse and classify documents with a queueflow ParallelBatchFlow: by default a ' +
      `fixed sample of ${DEFAULT_SAMPLE_SIZE} emails of the SpamAssassin public corpus, embedded in this process.`,
  )
  .addOption(new Option('--all', 'process the whole corpus (6,046 emails)').conflicts(['limit', 'input']))
  .addOption(
    new Option('--limit <n>', `process n documents (corpus: a fixed sample; default ${DEFAULT_SAMPLE_SIZE})`).argParser(
      positiveInteger,
    ),
  )
  .option(
    '--input <dir>',
    'process your own .eml, .txt and .md files under <dir> instead of the corpus (a relative path is taken from where you ran npm)',
  )
  .option(
    '--out <file>',
    'where to write the records, one JSON object per line (relative: from where you ran npm)',
    'out/documents.jsonl',
  )
  .option(
    '--concurrency <n>',
    `documents in flight at once (default ${DEFAULT_CONCURRENCY}; with --redis, across all workers, default ${DEFAULT_DISTRIBUTED_CONCURRENCY})`,
    positiveInteger,
  )
  .option(
    '--max-bytes <n>',
    'documents larger than this fail as TOO_LARGE',
    positiveInteger,
    DEFAULT_PIPELINE_PARAMS.maxBytes,
  )
  .option(
    '--llm [mock]',
    'add LLM summaries (with --desk: of the threads): against OPENAI_BASE_URL (with OPENAI_API_KEY and OPENAI_MODEL), or `--llm mock` against a local mock model server enforcing QF_LLM_QUOTA (embedded runs)',
  )
  .option('--no-progress', 'no progress bar')
  .option('--slowest <n>', 'how many of the slowest documents the report lists', positiveInteger, 5)
  .option(
    '--redis <url>',
    'run on the queueflow workers using this Redis (redis:// or rediss://) instead of in this process; ' +
      'start them with: npx queueflow worker --flows packages/examples/dist/flows.js --redis <url>',
  )
  .addOption(
    new Option(
      '--cluster <urls>',
      'with --desk: run on the queueflow workers of this Redis Cluster (startup node URLs, comma-separated) instead of in this process',
    )
      .argParser(clusterUrls)
      .conflicts(['redis', 'studio']),
  )
  .option('--prefix <prefix>', "with --redis or --cluster: the workers' key prefix", keyPrefix, '{qf}')
  .addOption(
    new Option(
      '--studio',
      'run on the embedded LocalEngine and serve queueflow studio for it (watch the run in a browser; it stays open after the report until Ctrl-C)',
    ).conflicts('redis'),
  )
  .option('--studio-port <n>', 'with --studio: its port on 127.0.0.1 (0: any free port)', portNumber, 4000)
  .addOption(
    new Option(
      '--desk',
      `the mail desk instead: replay the corpus in date order into a team of keyed agents (threads, senders, lists, a moderator); --limit mails from August 2002 (default ${DESK_SAMPLE_SIZE}) or --all, embedded (--studio: watch it, and answer the moderator yourself) or with --redis or --cluster; --llm: thread summaries from the model; states under out/desk/`,
    ).conflicts(['input', 'out', 'maxBytes', 'slowest']),
  );

/** `--cluster URL,URL`: redis:// or rediss:// URLs (the engine checks them further). */
function clusterUrls(value: string): string[] {
  const urls = value
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  const wrong = urls.find((url) => !/^rediss?:\/\/[^/]/.test(url));
  if (urls.length === 0 || wrong !== undefined)
    throw new InvalidArgumentError(
      `expected redis:// or rediss:// URLs of cluster nodes, comma-separated, got '${wrong ?? value}'`,
    );
  return urls;
}

function portNumber(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) {
    throw new InvalidArgumentError(`expected a port from 0 to 65535, got '${value}'`);
  }
  return parsed;
}

async function main(): Promise<void> {
  const options = program.parse().opts<CliOptions>();
  checkPrefixNeedsRedis(program, options.redis ?? options.cluster?.join(','));
  if (options.cluster && !options.desk)
    program.error(
      'error: --cluster runs the mail desk (--desk) on a Redis Cluster; the document pipeline takes --redis',
    );
  if (options.desk) {
    const { setUpLlm } = await import('./llm-option.js');
    const llm = await setUpLlm(
      program,
      options.llm,
      options.redis !== undefined || options.cluster !== undefined,
      'the workers summarise the threads',
    );
    const { runDeskCommand } = await import('./desk-command.js');
    await runDeskCommand({
      llm,
      limit: options.limit,
      all: options.all,
      redis: options.redis,
      cluster: options.cluster,
      prefix: options.prefix,
      progress: options.progress,
      concurrency: options.concurrency,
      ...(options.studio ? { studioPort: options.studioPort } : {}),
    });
    return;
  }
  const selection = selectDocuments(options);
  const docs = await expandSelection(selection);
  if (docs.length === 0) {
    throw new Error(
      selection.source === 'files' ? `no .eml, .txt or .md files under ${selection.dir}` : 'no documents selected',
    );
  }
  const distributed = options.redis !== undefined;
  const { mockLines, setUpLlm } = await import('./llm-option.js');
  const { enabled: llmSummary, mock } = await setUpLlm(program, options.llm, distributed);
  const params: PipelineParams = { maxBytes: options.maxBytes, llmSummary };
  const concurrency = options.concurrency ?? (distributed ? DEFAULT_DISTRIBUTED_CONCURRENCY : DEFAULT_CONCURRENCY);
  const what =
    selection.source === 'files'
      ? `${docs.length} files from ${selection.dir}`
      : `${docs.length} of the corpus's ${listCorpus().length} emails${options.all ? '' : ' (a fixed sample; --all for every one)'}`;
  console.error(
    `queueflow document pipeline: ${what}, ${distributed ? 'on queueflow workers' : options.studio ? 'embedded on the LocalEngine, with queueflow studio' : 'embedded'}, concurrency ${concurrency}`,
  );
  if (distributed && options.input)
    console.error('--input with --redis: every worker must be able to read these paths');

  const runner = { params, concurrency, progress: options.progress, total: docs.length };
  // Only the runner this run needs is loaded: the studio's, the workers' client, or the pipeline's.
  const studio = options.studio
    ? await import('./run-with-studio.js').then(({ runWithStudio }) =>
        runWithStudio(selection, { ...runner, studioPort: options.studioPort }),
      )
    : undefined;
  const result: RunnerResult =
    studio ??
    (distributed
      ? await import('./run-distributed.js').then(({ runDistributed }) =>
          runDistributed(selection, { ...runner, redisUrl: options.redis!, prefix: options.prefix }),
        )
      : await import('./run-embedded.js').then(({ runEmbedded }) => runEmbedded(selection, runner)));

  const out = resolveUserPath(options.out);
  await writeJsonl(out, result.records);
  const report = buildReport(result.records, result.elapsedMs, options.slowest);
  console.log(
    formatReport(report, {
      title: `queueflow document pipeline (${distributed ? 'distributed' : options.studio ? 'embedded, LocalEngine' : 'embedded'})`,
      lines: [...result.notes, ...(mock ? mockLines(mock) : []), `Records          ${out}`, ''],
    }),
  );
  await mock?.close();
  if (studio) {
    console.error(`queueflow studio stays open at ${studio.studioUrl}: Ctrl-C closes it`);
    await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    await studio.close();
  }
}

/** The documents as a small descriptor: the batch expands it, so `shared` stays small. */
function selectDocuments(options: CliOptions): DocumentSelection {
  if (options.input) {
    const dir = resolveUserPath(options.input);
    if (!existsSync(dir)) program.error(`error: --input: no such directory: ${dir}`);
    if (!statSync(dir).isDirectory()) program.error(`error: --input: not a directory: ${dir}`);
    return { source: 'files', dir, limit: options.limit ?? null };
  }
  return { source: 'spam-assassin', limit: options.all ? null : (options.limit ?? DEFAULT_SAMPLE_SIZE) };
}

runCommand(main);
