import { Link } from 'wouter-preact';
import type { MailboxInfo, RunEvent as LoggedEvent, RunInfo, StepRecord } from '../api/types';
import { dateTime, plural } from './format';

/** One entry of a run's event timeline. */
interface RunEvent {
  /** Epoch ms; `undefined` for what has no time of its own (shown after the timed ones). */
  at: number | undefined;
  kind: string;
  text: preact.ComponentChildren;
}

/**
 * The run's events, oldest first (Temporal's event history): from its event log (`logged`: each
 * park and wake with its mailbox and message, throttle and release with its budget key, takeover
 * from one worker by another, cancel and by whom, operator's retry), merged with what the run's
 * record, its history and the mailboxes hold: created (or forked), started, each try that failed
 * and whether it was retried, each step committed (by which worker, and when that is not the
 * worker of the step before it, that it moved), and how it ended. Where the log has nothing of a
 * kind (a run older than the log), that kind is derived as before: where it waits now (a mailbox,
 * its children, a budget), operators' retries as a count.
 */
export function RunEvents({
  run,
  steps,
  mailboxes,
  logged,
}: {
  run: RunInfo;
  steps: StepRecord[] | undefined;
  mailboxes: MailboxInfo[] | undefined;
  logged?: LoggedEvent[] | undefined;
}) {
  const events = runEvents(run, steps ?? [], mailboxes ?? [], logged ?? []);
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

function runEvents(run: RunInfo, steps: StepRecord[], mailboxes: MailboxInfo[], logged: LoggedEvent[]): RunEvent[] {
  const events: RunEvent[] = logged.flatMap(fromLog);
  const has = (kind: LoggedEvent['kind']): boolean => logged.some((event) => event.kind === kind);
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
  if (run.retries && !has('operator-retry'))
    events.push({
      at: undefined,
      kind: 'operator-retry',
      text: `retried by an operator ${plural(run.retries, 'time')}`,
    });
  const parked = mailboxes.flatMap((box) => box.parked.filter((p) => p.runId === run.id).map((p) => ({ box, p })))[0];
  if (run.status === 'waiting' && parked && !has('parked')) {
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
  if (run.status === 'throttled' && !has('throttled'))
    events.push({
      at: run.updatedAt,
      kind: 'throttled',
      text: `throttled: waiting for budget '${run.throttledBy ?? ''}'`,
    });
  if (run.finishedAt !== undefined && !(run.status === 'cancelled' && has('cancelled'))) {
    const why = run.error ? `: ${run.error.message}` : '';
    events.push({ at: run.finishedAt, kind: run.status, text: `${run.status}${run.status === 'failed' ? why : ''}` });
  }
  const timed = events.filter((e) => e.at !== undefined).sort((a, b) => a.at! - b.at!);
  return [...timed, ...events.filter((e) => e.at === undefined)];
}

/** An entry of the run's event log as the timeline shows it (`forked` and `retried` are derived: see runEvents). */
function fromLog(event: LoggedEvent): RunEvent[] {
  const step = <>step #{event.step}</>;
  switch (event.kind) {
    case 'parked':
      return [
        {
          at: event.at,
          kind: 'parked',
          text: (
            <>
              {step} parked {event.room ? 'for room in the full inbox' : 'on mailbox'}
              {event.addresses.length > 1 ? 'es' : ''}{' '}
              {event.addresses.map((address, i) => (
                <span key={address}>
                  {i > 0 ? ', ' : ''}
                  <Link href="/mailboxes">{address}</Link>
                </span>
              ))}
              {event.deadline === null ? ', no timeout' : `, until ${dateTime(event.deadline)}`}
            </>
          ),
        },
      ];
    case 'woken':
      return [
        {
          at: event.at,
          kind: 'woken',
          text: event.timedOut ? (
            <>{step} woken: its receive timed out</>
          ) : (
            <>
              {step} woken{event.messageId === undefined ? '' : ' by message '}
              {event.messageId === undefined ? null : <code>{event.messageId}</code>}
              {event.address === undefined ? null : (
                <>
                  {' '}
                  on <Link href="/mailboxes">{event.address}</Link>
                </>
              )}
            </>
          ),
        },
      ];
    case 'throttled':
      return [
        {
          at: event.at,
          kind: 'throttled',
          text: (
            <>
              {step} throttled: waiting for budget '{event.key}'
            </>
          ),
        },
      ];
    case 'released':
      return [
        {
          at: event.at,
          kind: 'released',
          text: (
            <>
              {step} released by budget '{event.key}'
            </>
          ),
        },
      ];
    case 'taken-over':
      return [
        {
          at: event.at,
          kind: 'taken-over',
          text: (
            <>
              {step} taken over from worker <code>{event.from}</code> (it stopped heartbeating) by{' '}
              <code>{event.by}</code>
            </>
          ),
        },
      ];
    case 'cancelled':
      return [
        {
          at: event.at,
          kind: 'cancelled',
          text: (
            <>
              cancelled at {step}
              {event.by === undefined ? '' : ` by ${event.by}`}
            </>
          ),
        },
      ];
    case 'operator-retry':
      return [
        {
          at: event.at,
          kind: 'operator-retry',
          text: (
            <>
              retried by an operator after it {event.status}, at {step}
            </>
          ),
        },
      ];
    default:
      return [];
  }
}
