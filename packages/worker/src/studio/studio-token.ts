import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * The studio's access token. A request carries it as `Authorization: Bearer <token>` or
 * `?token=<token>` (how the page's event stream and the printed URL carry it). A page opened with
 * the token gets it back in an HttpOnly, SameSite=Strict cookie, which is accepted for the page
 * and its scripts only (a `<script src>` cannot send a header): every API call must carry the
 * token itself, so no other site can act through the cookie.
 */
export class StudioToken {
  private readonly expected: Buffer;
  /** The cookie's name, distinct per token, so studios on other ports of this host keep theirs. */
  readonly cookieName: string;

  constructor(token: string) {
    if (token.length === 0) throw new TypeError('createStudioHandler: expected `token` to be a non-empty string');
    this.expected = createHash('sha256').update(token).digest();
    this.cookieName = `qf_studio_${this.expected.subarray(0, 4).toString('hex')}`;
  }

  /** Whether the request carries the token in its header or query (`page`: or the cookie). */
  allows(req: IncomingMessage, query: URLSearchParams, page: boolean): boolean {
    const header = req.headers.authorization;
    if (header?.startsWith('Bearer ') && this.matches(header.slice(7).trim())) return true;
    const fromQuery = query.get('token');
    if (fromQuery !== null && this.matches(fromQuery)) return true;
    return page && this.matches(cookieValue(req.headers.cookie, this.cookieName));
  }

  /** The `Set-Cookie` value that lets a browser load the page's files under `path`. */
  cookie(token: string, path: string): string {
    return `${this.cookieName}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=${path}`;
  }

  private matches(candidate: string | undefined): boolean {
    if (candidate === undefined) return false;
    // Hashes have one length, so the comparison takes one time whatever was sent.
    return timingSafeEqual(createHash('sha256').update(candidate).digest(), this.expected);
  }
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
