import { Link } from 'wouter-preact';
import type { MailboxInfo, RunInfo, StepRecord } from '../api/types';
import { dateTime, plural } from './format';

/** One entry of a run's event timeline. */
interface RunEvent {
  /** Epoch ms; `undefined` for what has no time of its own (shown after the timed ones). */
  at: number | undefined;
  kind: string;
  text: preact.ComponentChildren;
}

/**
 * The run's events, oldest first (Temporal's event history, from what the run's record, its
 * history and the mailboxes hold): created (or forked), started, each try that failed and
 * whether it was retried, each step committed (by which worker, and when that is not the worker
 * of the step before it, that it moved), operators' retries, where it waits now (a mailbox, its
 * children, a budget), and how it ended.
 */
export function RunEvents({
  run,
  steps,
  mailboxes,
}: {
  run: RunInfo;
  steps: StepRecord[] | undefined;
  mailboxes: MailboxInfo[] | undefined;
}) {
  const events = runEvents(run, steps ?? [], mailboxes ?? []);
  return (
    <ol class="run-events" data-testid="run-events" aria-label="Events">
      {events.map((event, i) => (
        <li key={i} data-event={event.kind}>
          <span class="muted small">{event.at === undefined ? '—' : dateTime(event.at)}</span>{' '}
          <span class={`event event-${event.kind}`}>{event.text}</span>
        </li>
      ))}
    </ol>
  );
}

function runEvents(run: RunInfo, steps: StepRecord[], mailboxes: MailboxInfo[]): RunEvent[] {
  const events: RunEvent[] = [];
  events.push(
    run.forkedFrom
      ? {
          at: run.createdAt,
          kind: 'forked',
          text: (
            <>
              forked from{' '}
              <Link href={`/runs/${run.forkedFrom.runId}?step=${run.forkedFrom.step}`}>{run.forkedFrom.runId}</Link> at
              step #{run.forkedFrom.step}
            </>
          ),
        }
      : { at: run.createdAt, kind: 'created', text: 'created' },
  );
  if (run.startedAt !== undefined)
    events.push({ at: run.startedAt, kind: 'started', text: 'started: a worker took its first step' });
  // Failed tries: retried when a later try of the same node came (or a step committed after it).
  run.errors.forEach((error, i) => {
    const later =
      run.errors.slice(i + 1).some((next) => next.node === error.node) ||
      steps.some((step) => step.node === error.node && error.at !== undefined && step.endedAt >= error.at);
    const node = error.node ?? 'a node';
    events.push({
      at: error.at,
      kind: later ? 'retried' : 'try-failed',
      text: (
        <>
          try {(error.attempt ?? 0) + 1} of <code>{node}</code> failed{later ? ', retried' : ''}: {error.message}
        </>
      ),
    });
  });
  steps.forEach((step, i) => {
    const previous = steps[i - 1];
    const moved = previous?.worker !== undefined && step.worker !== undefined && previous.worker !== step.worker;
    events.push({
      at: step.endedAt,
      kind: 'step',
      text: (
        <>
          step #{step.step} <code>{step.node}</code> committed{step.action ? ` → ${step.action}` : ''}
          {step.tries > 1 ? ` after ${plural(step.tries, 'try', 'tries')}` : ''}
          {step.merged ? `, merging ${plural(step.merged.children, 'child', 'children')}` : ''}
          {step.worker ? (
            <>
              {' '}
              on <code>{step.worker}</code>
              {moved ? (
                <>
                  {' '}
                  (moved from <code>{previous!.worker}</code>)
                </>
              ) : null}
            </>
          ) : null}
        </>
      ),
    });
  });
  if (run.retries)
    events.push({
      at: undefined,
      kind: 'operator-retry',
      text: `retried by an operator ${plural(run.retries, 'time')}`,
    });
  const parked = mailboxes.flatMap((box) => box.parked.filter((p) => p.runId === run.id).map((p) => ({ box, p })))[0];
  if (run.status === 'waiting' && parked) {
    events.push({
      at: parked.p.since,
      kind: 'parked',
      text: (
        <>
          parked on mailbox <Link href="/mailboxes">{parked.box.address}</Link>
          {parked.p.deadline === null ? ', no timeout' : `, until ${dateTime(parked.p.deadline)}`}
        </>
      ),
    });
  } else if (run.status === 'waiting' && run.children) {
    events.push({
      at: undefined,
      kind: 'waiting-children',
      text: `waiting on its fan-out: ${run.children.ended} of ${plural(run.children.total, 'child', 'children')} ended`,
    });
  }
  if (run.status === 'throttled')
    events.push({
      at: run.updatedAt,
      kind: 'throttled',
      text: `throttled: waiting for budget '${run.throttledBy ?? ''}'`,
    });
  if (run.finishedAt !== undefined) {
    const why = run.error ? `: ${run.error.message}` : '';
    events.push({ at: run.finishedAt, kind: run.status, text: `${run.status}${run.status === 'failed' ? why : ''}` });
  }
  const timed = events.filter((e) => e.at !== undefined).sort((a, b) => a.at! - b.at!);
  return [...timed, ...events.filter((e) => e.at === undefined)];
}
