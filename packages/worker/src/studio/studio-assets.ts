import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import sirv from 'sirv';

/** Where the build of `@queueflow/studio-ui` lies in this package (copied there by its build). */
const STUDIO_UI_DIR = fileURLToPath(new URL('../studio-ui/', import.meta.url));

/** What the page reads from its `<script id="queueflow-studio-config">` (a JSON block, not code). */
export interface PageConfig {
  /** Path the studio is served under, without a trailing slash ('' at the root). */
  basePath: string;
  readOnly: boolean;
  /** Set when the studio needs a token: the page sends it with each API call. */
  token?: string;
}

/**
 * The studio's page and its files: `index.html` for every view URL, with the base path and the
 * page's config written in; the hashed files under `assets/` with a year-long immutable cache
 * (sirv). The page itself is never cached, so a new version shows at the next load.
 */
export class StudioAssets {
  private readonly serveFile: ReturnType<typeof sirv> | undefined;
  private readonly index: string | undefined;

  constructor(dir: string = STUDIO_UI_DIR) {
    const indexFile = `${dir}/index.html`;
    if (!existsSync(indexFile)) return;
    this.index = readFileSync(indexFile, 'utf8');
    this.serveFile = sirv(dir, { dev: false, etag: true, immutable: true, maxAge: 31_536_000, extensions: [] });
  }

  /** Answers with the page, for a view URL. */
  page(res: ServerResponse, config: PageConfig, headOnly: boolean, extraHeaders: Record<string, string> = {}): void {
    if (!this.index) return this.missing(res);
    const json = JSON.stringify(config).replace(/</g, '\\u003c');
    const head =
      `<base href="${escapeAttribute(config.basePath)}/">` +
      `<script id="queueflow-studio-config" type="application/json">${json}</script>`;
    // After <title> (the charset comes first), before any relative URL the <base> resolves.
    const html = /<\/title>/i.test(this.index)
      ? this.index.replace(/<\/title>/i, (end) => `${end}${head}`)
      : this.index.replace(/<head>/i, (start) => `${start}${head}`);
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': Buffer.byteLength(html),
      'Cache-Control': 'no-store',
      'Referrer-Policy': 'no-referrer',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Content-Security-Policy':
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
        "font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
      ...extraHeaders,
    });
    res.end(headOnly ? undefined : html);
  }

  /** Answers with the file at `path` (below the base path), or 404. */
  file(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (!this.serveFile) return this.missing(res);
    // sirv reads only `url` and `headers`: hand it the path below the base path.
    const request = { url: path, headers: req.headers, method: req.method } as IncomingMessage;
    this.serveFile(request, res, () => {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`no file ${path} in queueflow studio`);
    });
  }

  private missing(res: ServerResponse): void {
    res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(
      'queueflow studio: the page is not built in this copy of @queueflow/worker (dist/studio-ui is missing); ' +
        'in the queueflow repository, run `npm run build`',
    );
  }
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}
