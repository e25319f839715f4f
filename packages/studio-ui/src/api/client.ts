import { config } from '../config';

/** An error answer of the studio API: `{ error: { code, message } }` with its HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The URL of API path `path` (e.g. `/api/runs`) under the studio's base path, with `query`. */
export function apiUrl(path: string, query: Record<string, string | number | undefined> = {}): string {
  const url = new URL(`${config.basePath}${path}`, window.location.origin);
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== '') url.searchParams.set(key, String(value));
  return url.pathname + url.search;
}

async function request<T>(
  method: 'GET' | 'POST',
  path: string,
  query?: Record<string, string | number | undefined>,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (config.token) headers.Authorization = `Bearer ${config.token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(apiUrl(path, query), {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new ApiError(0, 'NETWORK', `the studio server did not answer (${(error as Error).message})`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    throw new ApiError(
      response.status,
      'BAD_RESPONSE',
      `the studio server answered ${response.status} with something that is not JSON`,
    );
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(response.status, error?.code ?? 'HTTP_ERROR', error?.message ?? `HTTP ${response.status}`);
  }
  return parsed as T;
}

export const api = {
  get: <T>(path: string, query?: Record<string, string | number | undefined>) => request<T>('GET', path, query),
  post: <T>(path: string, body: unknown = {}) => request<T>('POST', path, undefined, body),
};
