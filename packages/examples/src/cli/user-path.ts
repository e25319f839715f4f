import path from 'node:path';

/**
 * The directory the user ran the command from: `INIT_CWD`, which npm sets to it for a script
 * (`npm run -w @queueflow/examples`, `npm start`, which run in the package's folder), else the
 * process's working directory (`node dist/cli/pipeline.js`).
 */
export function userDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return env.INIT_CWD || process.cwd();
}

/** `file` as an absolute path; a relative one is taken from the {@link userDirectory}. */
export function resolveUserPath(file: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(userDirectory(env), file);
}
