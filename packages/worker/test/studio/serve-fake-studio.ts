/**
 * The studio on a fake engine full of demo runs, for working on the page without Redis:
 * `npx tsx packages/worker/test/studio/serve-fake-studio.ts [port]` after `npm run build`
 * (STUDIO_READ_ONLY=1, STUDIO_TOKEN=…, STUDIO_FILLER=<runs> to vary it).
 */
import { createServer } from 'node:http';
import { createStudioHandler } from '../../src/studio/create-studio-handler.js';
import { demoEngine } from './demo-runs.js';

const port = Number(process.argv[2] ?? 4100);
const engine = demoEngine({ filler: Number(process.env.STUDIO_FILLER ?? 120) });
const handler = createStudioHandler({
  engine,
  readOnly: process.env.STUDIO_READ_ONLY === '1',
  ...(process.env.STUDIO_TOKEN ? { token: process.env.STUDIO_TOKEN } : {}),
  assetsDir: new URL('../../dist/studio-ui/', import.meta.url).pathname,
});
createServer(handler).listen(port, '127.0.0.1', () => console.log(`fake studio on http://127.0.0.1:${port}/`));
