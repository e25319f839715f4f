import type { ErrorRecord } from '../api/types';
import { dateTime } from './format';

/** The errors of a run's failed tries, newest first, each with its stack. */
export function RunErrors({ errors }: { errors: ErrorRecord[] }) {
  if (errors.length === 0) return <p class="muted">No failed try.</p>;
  return (
    <ul class="errors">
      {[...errors].reverse().map((error, index) => (
        <li key={index} class="error-item">
          <div>
            <strong>{error.name}</strong>
            {error.code && <span class="tag">{error.code}</span>}: {error.message}
          </div>
          <div class="muted small">
            {error.node !== undefined && (
              <>
                node <code>{error.node}</code>
              </>
            )}
            {error.attempt !== undefined && <> · try {error.attempt + 1}</>}
            {error.at !== undefined && <> · {dateTime(error.at)}</>}
            {!error.retryable && <> · not retryable</>}
          </div>
          {error.stack && (
            <details>
              <summary>Stack</summary>
              <pre class="stack">{error.stack}</pre>
            </details>
          )}
        </li>
      ))}
    </ul>
  );
}
