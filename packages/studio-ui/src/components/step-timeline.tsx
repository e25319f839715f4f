import type { StepRecord } from '../api/types';
import { dateTime, duration, plural } from './format';

export interface StepTimelineProps {
  steps: StepRecord[];
  selected: number | undefined;
  onSelect: (step: number) => void;
}

/** The run's committed steps, oldest first: node, action, tries, duration, worker; a row picks a step's diff. */
export function StepTimeline({ steps, selected, onSelect }: StepTimelineProps) {
  if (steps.length === 0) return <p class="muted">No step has committed yet.</p>;
  const first = steps[0]!.startedAt;
  const last = Math.max(...steps.map((s) => s.endedAt));
  const span = Math.max(1, last - first);
  return (
    <div class="table-wrap">
      <table class="timeline" aria-label="Committed steps">
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Node</th>
            <th scope="col">Action</th>
            <th scope="col">Tries</th>
            <th scope="col">Duration</th>
            <th scope="col">Worker</th>
            <th scope="col" class="bar-col">
              Timeline
            </th>
          </tr>
        </thead>
        <tbody>
          {steps.map((step) => {
            const isSelected = step.step === selected;
            return (
              <tr key={step.step} class={isSelected ? 'selected' : undefined}>
                <td>
                  <button
                    type="button"
                    class="link-button"
                    aria-pressed={isSelected}
                    onClick={() => onSelect(step.step)}
                    title={`Show what step #${step.step} changed`}
                  >
                    #{step.step}
                  </button>
                </td>
                <td>
                  <code>{step.node}</code>
                  {step.merged && (
                    <span class="tag" title={`merged ${plural(step.merged.children, 'child', 'children')}`}>
                      fan-in ×{step.merged.children}
                      {step.merged.conflicts.length > 0 ? `, ${plural(step.merged.conflicts.length, 'conflict')}` : ''}
                    </span>
                  )}
                </td>
                <td>{step.action ?? <span class="muted">default</span>}</td>
                <td class={step.tries > 1 ? 'warn' : undefined}>{step.tries}</td>
                <td title={`${dateTime(step.startedAt)} → ${dateTime(step.endedAt)}`}>
                  {duration(step.endedAt - step.startedAt)}
                </td>
                <td>
                  <code class="small">{step.worker ?? '—'}</code>
                </td>
                <td class="bar-col" aria-hidden="true">
                  <span
                    class="bar"
                    style={{
                      marginLeft: `${((step.startedAt - first) / span) * 100}%`,
                      width: `${Math.max(0.5, ((step.endedAt - step.startedAt) / span) * 100)}%`,
                    }}
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
