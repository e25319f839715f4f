import { readFileSync, readlinkSync, statSync, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { DocumentError } from '../documents/document-error.js';
import type { DocumentRef } from '../documents/types.js';
import { corpusFilePath } from './spam-assassin-corpus.js';

/** Where a {@link DocumentRef} lives on this process's file system. */
function documentFilePath(ref: Pick<DocumentRef, 'source' | 'path'>): string {
  return ref.source === 'spam-assassin' ? corpusFilePath(ref.path) : ref.path;
}

/**
 * Reads a document's bytes. A file over `maxBytes` fails with `TOO_LARGE` before it is read; a
 * missing or unreadable one, a symbolic link to nothing, or what is not a regular file (a FIFO,
 * which is never opened, a socket, a device, a folder) with `UNREADABLE`. Other I/O errors (e.g.
 * `EMFILE`) are thrown as they are, so the node's retry policy applies to them.
 *
 * @throws DocumentError `TOO_LARGE` or `UNREADABLE`.
 */
export async function readDocumentBytes(ref: Pick<DocumentRef, 'source' | 'path'>, maxBytes: number): Promise<Buffer> {
  const file = documentFilePath(ref);
  let size: number;
  try {
    const info = await stat(file);
    if (!info.isFile()) throw notARegularFile(info, file);
    size = info.size;
  } catch (error) {
    throw asReadError(error, file);
  }
  if (size > maxBytes) {
    throw new DocumentError('TOO_LARGE', `${size} bytes is over the limit of ${maxBytes} bytes (maxBytes)`);
  }
  try {
    return await readFile(file);
  } catch (error) {
    throw asReadError(error, file);
  }
}

function asReadError(error: unknown, file: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const target = code === 'ENOENT' ? linkTarget(file) : undefined;
  if (target !== undefined) {
    return new DocumentError('UNREADABLE', `a symbolic link to nothing: ${file} -> ${target}`, { cause: error });
  }
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR' || code === 'ENOTDIR' || code === 'ELOOP') {
    return new DocumentError('UNREADABLE', `${String(code)}: ${file}`, { cause: error });
  }
  return error;
}

/** Where `file` points when it is a symbolic link. */
function linkTarget(file: string): string | undefined {
  try {
    return readlinkSync(file);
  } catch {
    return undefined; // not a link (EINVAL), or not there at all
  }
}

/** `UNREADABLE`, naming what the entry is instead of a file. */
function notARegularFile(info: Stats, file: string): DocumentError {
  const what = info.isFIFO()
    ? 'a FIFO (named pipe)'
    : info.isSocket()
      ? 'a socket'
      : info.isCharacterDevice() || info.isBlockDevice()
        ? 'a device'
        : info.isDirectory()
          ? 'a folder'
          : 'something else';
  return new DocumentError('UNREADABLE', `not a regular file but ${what}: ${file}`);
}

/** {@link readDocumentBytes}, synchronously (for one-off bulk reads such as training). */
export function readDocumentBytesSync(ref: Pick<DocumentRef, 'source' | 'path'>, maxBytes: number): Buffer {
  const file = documentFilePath(ref);
  try {
    const info = statSync(file);
    if (!info.isFile()) throw notARegularFile(info, file);
    if (info.size > maxBytes) {
      throw new DocumentError('TOO_LARGE', `${info.size} bytes is over the limit of ${maxBytes} bytes (maxBytes)`);
    }
    return readFileSync(file);
  } catch (error) {
    throw asReadError(error, file);
  }
}
