/** What the server wrote into the page (`<script id="queueflow-studio-config">`, a JSON block). */
export interface StudioConfig {
  /** Path the studio is served under, '' at the root. */
  basePath: string;
  readOnly: boolean;
  /** The token the API wants, when the studio has one. */
  token?: string;
}

function readConfig(): StudioConfig {
  const block = document.getElementById('queueflow-studio-config');
  const config: Partial<StudioConfig> = block?.textContent ? (JSON.parse(block.textContent) as StudioConfig) : {};
  // The URL the studio printed carries the token: take it off the address bar (it now lives in
  // this page's config) so that links copied from here do not spread it.
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl !== null) {
    url.searchParams.delete('token');
    window.history.replaceState(window.history.state, '', url);
  }
  const token = config.token ?? fromUrl ?? undefined;
  return { basePath: config.basePath ?? '', readOnly: config.readOnly ?? false, ...(token ? { token } : {}) };
}

export const config: StudioConfig = readConfig();
