import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { QUEUEFLOW_VERSION } from './options.js';

/** The starter project's files, shipped in the package (`template/`), copied as they are. */
const TEMPLATE_DIR = fileURLToPath(new URL('../../template/', import.meta.url));

/** Template files and their names in the project (npm leaves `.gitignore` out of tarballs). */
const TEMPLATE_FILES: ReadonlyArray<readonly [from: string, to: string]> = [
  ['flows.ts', 'flows.ts'],
  ['dev.ts', 'dev.ts'],
  ['start.ts', 'start.ts'],
  ['tsconfig.json', 'tsconfig.json'],
  ['README.md', 'README.md'],
  ['gitignore', '.gitignore'],
];

/** Versions of the dev tools the starter's scripts run (the ones queueflow is built and tested with). */
const DEV_DEPENDENCIES = { '@types/node': '^20.19.0', tsx: '^4.20.0', typescript: '~5.9.3' };

/**
 * The `queueflow init [dir]` command: writes a minimal project into `dir` (default: the working
 * directory), which must be empty or not exist yet: package.json (ESM, depending on
 * `@queueflow/runtime` and `@queueflow/worker` at this CLI's version; scripts `dev`, `worker`,
 * `start`, `build`), tsconfig.json for NodeNext, flows.ts with one flow, dev.ts, start.ts, a
 * README and a .gitignore.
 */
export function initCommand(): Command {
  return new Command('init')
    .description('write a minimal project using queueflow into an empty or new folder')
    .argument('[dir]', 'the folder (created when missing; must be empty)', '.')
    .action((dir: string) => {
      const target = path.resolve(dir);
      const written = writeStarter(target);
      const cd = path.relative(process.cwd(), target);
      console.log(`Wrote a queueflow project in ${target}: ${written.join(', ')}`);
      console.log(
        [
          '',
          'Next:',
          ...(cd === '' ? [] : [`  cd ${quoted(cd)}`]),
          ...installLines(target),
          '  npm run dev       # the flow embedded, in this process',
          '  npm run worker    # a worker on Redis (REDIS_URL, default redis://127.0.0.1:6379)',
          '  npm start         # in another terminal: a run on Redis, waited for',
        ].join('\n'),
      );
    });
}

/**
 * How to install the packages: from the registry once they are published; until then from the
 * tarballs `npm pack` makes in the queueflow repository (named when this CLI runs from one).
 */
function installLines(target: string): string[] {
  const tarballs = ['runtime', 'worker'].map((name) => `queueflow-${name}-${QUEUEFLOW_VERSION}.tgz`);
  if (REPOSITORY_DIR === undefined) {
    return [
      '  npm install       # @queueflow/* from the npm registry; before they are published, install the',
      `                    # tarballs of 'npm pack -w @queueflow/runtime -w @queueflow/worker' instead: ${tarballs.join(' ')}`,
    ];
  }
  const repository = path.relative(target, REPOSITORY_DIR) || '.';
  return [
    `  (cd ${quoted(repository)} && npm pack -w @queueflow/runtime -w @queueflow/worker)   # not on the npm registry yet`,
    `  npm install ${tarballs.map((file) => quoted(path.join(repository, file))).join(' ')}   # and the dev tools`,
  ];
}

/** The queueflow repository this CLI runs from (its workspace), or undefined when installed from a tarball or the registry. */
const REPOSITORY_DIR = ((): string | undefined => {
  const root = fileURLToPath(new URL('../../../../', import.meta.url));
  try {
    const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { name?: unknown };
    return manifest.name === 'queueflow' && existsSync(path.join(root, 'packages', 'runtime')) ? root : undefined;
  } catch {
    return undefined;
  }
})();

function quoted(file: string): string {
  return /[\s'"$]/.test(file) ? JSON.stringify(file) : file;
}

/**
 * Writes the starter project into `target` and returns the names of the files written.
 * @throws Error when `target` is a file, or a folder that is not empty (nothing is written then).
 */
function writeStarter(target: string): string[] {
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) throw new Error(`init: '${target}' is a file, not a folder`);
    const entries = readdirSync(target);
    if (entries.length > 0) {
      const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? `, ... (${entries.length} in all)` : '');
      throw new Error(
        `init: '${target}' is not empty (it has ${shown}); init writes a new project into an empty or new folder, and overwrites nothing`,
      );
    }
  }
  mkdirSync(target, { recursive: true });
  const manifest = {
    name: packageName(path.basename(target)),
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      dev: 'tsx dev.ts',
      worker: 'queueflow worker --flows flows.ts',
      start: 'tsx start.ts',
      build: 'tsc',
    },
    dependencies: {
      '@queueflow/runtime': `^${QUEUEFLOW_VERSION}`,
      '@queueflow/worker': `^${QUEUEFLOW_VERSION}`,
    },
    devDependencies: DEV_DEPENDENCIES,
  };
  writeFileSync(path.join(target, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const [from, to] of TEMPLATE_FILES) copyFileSync(path.join(TEMPLATE_DIR, from), path.join(target, to));
  // The README gives the install line init prints (the tarballs, until the packages are published).
  const readme = path.join(target, 'README.md');
  const install = installLines(target)
    .map((line) => line.slice(2))
    .join('\n');
  writeFileSync(
    readme,
    readFileSync(readme, 'utf8').replace('{{install}}', () => install),
  );
  return ['package.json', ...TEMPLATE_FILES.map(([, to]) => to)];
}

/** A valid npm package name from a folder name: lower case, letters, digits, `-`, `.`, `_`. */
function packageName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|-+$/g, '');
  return name === '' ? 'queueflow-app' : name;
}
