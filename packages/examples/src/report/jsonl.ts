import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Writes one JSON value per line to `file` (folders created as needed). */
export async function writeJsonl(file: string, values: readonly unknown[]): Promise<void> {
  await mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await writeFile(file, values.map((value) => JSON.stringify(value)).join('\n') + (values.length > 0 ? '\n' : ''));
}
