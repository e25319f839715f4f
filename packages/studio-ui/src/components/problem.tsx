import { ApiError } from '../api/client';

/** An API error where the data would be, read out by screen readers. */
export function Problem({ error, what }: { error: unknown; what: string }) {
  const message =
    error instanceof ApiError ? `${error.message} (${error.code})` : String((error as Error)?.message ?? error);
  return (
    <div class="problem" role="alert">
      <strong>Could not load {what}:</strong> {message}
    </div>
  );
}
