// The parts of the build tsc does not make: the Lua scripts, the studio's page (built by
// @queueflow/studio-ui, which turbo builds first), and the CLI's execute bit.
import { chmodSync, cpSync, existsSync, rmSync } from 'node:fs';

cpSync('src/lua', 'dist/lua', { recursive: true });
const studio = '../studio-ui/dist';
if (!existsSync(`${studio}/index.html`)) {
  console.error(`${studio}/index.html is missing: build @queueflow/studio-ui first (npm run build at the root does)`);
  process.exit(1);
}
rmSync('dist/studio-ui', { recursive: true, force: true });
cpSync(studio, 'dist/studio-ui', { recursive: true });
chmodSync('dist/cli.js', 0o755);
