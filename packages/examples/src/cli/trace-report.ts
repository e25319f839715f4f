#!/usr/bin/env node
/**
 * `npm run trace-report -w @queueflow/examples -- <spans.jsonl> [--run <id>]`: prints the trace
 * of a run (by default, the one with the most spans) from the JSON-lines file that processes
 * traced with `QUEUEFLOW_TRACE_FILE` (src/tracing/register.ts) wrote, as an indented tree.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import type { SpanLine } from '../tracing/json-lines-exporter.js';
import { renderTrace } from '../tracing/render-trace.js';
import { runCommand } from './run-command.js';

const program = new Command()
  .name('trace-report')
  .description('print the trace of a run from a JSON-lines span file (QUEUEFLOW_TRACE_FILE)')
  .argument('<file>', 'the span file')
  .option('--run <id>', 'the run whose trace to print (default: the trace with the most spans)');

async function main(): Promise<void> {
  program.parse();
  const [file] = program.args as [string];
  const options = program.opts<{ run?: string }>();
  const spans = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as SpanLine);
  const traces = new Map<string, SpanLine[]>();
  for (const span of spans) traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span]);
  const chosen = options.run
    ? [...traces.values()].find((list) => list.some((s) => s.attributes['queueflow.run.id'] === options.run))
    : [...traces.values()].sort((a, b) => b.length - a.length)[0];
  if (!chosen) throw new Error(options.run ? `no span of run '${options.run}' in ${file}` : `no span in ${file}`);
  console.log(renderTrace(chosen));
}

runCommand(main);
