import type { ConversationInfo } from '../api/types';
import { shortName, spentByKey } from './conversation-model';
import { count, duration } from './format';

/** One limit of the budget: used of max, as a bar and as text. */
function Use({
  label,
  used,
  max,
  unit,
  testId,
}: {
  label: string;
  used: number;
  max: number;
  unit: string;
  testId: string;
}) {
  const over = used >= max;
  return (
    <div class="budget-use" data-testid={testId}>
      <span>
        {label}: <strong>{count(used)}</strong> of {count(max)} {unit}
        {over ? <span class="warn-text"> (reached)</span> : null}
      </span>
      <progress
        max={max}
        value={Math.min(used, max)}
        aria-label={`${label}: ${count(used)} of ${count(max)} ${unit}`}
      />
    </div>
  );
}

/**
 * What the conversation used of its budget (turns, cost, wall time), and what each agent spent
 * per key (`this.spend`), the budget's cost key first.
 */
export function ConversationSpend({ info, now }: { info: ConversationInfo; now: number }) {
  const budget = info.budget;
  const spent = spentByKey(info);
  const costKey = budget?.cost?.key;
  const keys = Object.keys(spent).sort((a, b) => (a === costKey ? -1 : b === costKey ? 1 : a.localeCompare(b)));
  if (costKey !== undefined && !keys.includes(costKey)) keys.unshift(costKey);
  const spenders = Object.keys(info.spend);
  const elapsed = (info.status === 'ended' ? info.updatedAt : now) - info.startedAt;
  return (
    <>
      {budget ? (
        <div class="budget-uses">
          {budget.turns !== undefined && (
            <Use label="Turns" used={info.turns} max={budget.turns} unit="turns" testId="budget-turns" />
          )}
          {budget.cost && (
            <Use
              label={`Cost (${budget.cost.key})`}
              used={spent[budget.cost.key] ?? 0}
              max={budget.cost.max}
              unit={budget.cost.key}
              testId="budget-cost"
            />
          )}
          {budget.wallMs !== undefined && (
            <Use
              label="Wall time"
              used={Math.round(elapsed / 1000)}
              max={Math.round(budget.wallMs / 1000)}
              unit="s"
              testId="budget-wall"
            />
          )}
          {budget.messages !== undefined && (
            <p class="small muted">At most {count(budget.messages)} messages handled.</p>
          )}
        </div>
      ) : (
        <p class="muted">
          No budget: {info.turns} turns over {duration(Math.max(0, elapsed))}.
        </p>
      )}
      {keys.length === 0 ? (
        <p class="muted">No turn has spent anything yet (`this.spend(key, n)`).</p>
      ) : (
        <div class="table-wrap">
          <table class="compact" aria-label="Spend per agent and key" data-testid="conversation-spend">
            <thead>
              <tr>
                <th scope="col">Agent</th>
                {keys.map((key) => (
                  <th scope="col" class="num" key={key}>
                    {key}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {spenders.map((agent) => (
                <tr key={agent} data-agent={agent}>
                  <td>
                    <code>{shortName(agent)}</code>
                  </td>
                  {keys.map((key) => (
                    <td class="num" key={key}>
                      {count(info.spend[agent]?.[key] ?? 0)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <td>
                  <strong>All agents</strong>
                </td>
                {keys.map((key) => (
                  <td class="num" key={key} data-testid={`spent-${key}`}>
                    {count(spent[key] ?? 0)}
                    {key === costKey && budget?.cost ? ` / ${count(budget.cost.max)}` : ''}
                  </td>
                ))}
              </tr>
            </tfoot>
          </table>
        </div>
      )}
    </>
  );
}
