/**
 * Reading a file of the config directory, which only an operator controls but anyone with
 * write access to a mounted volume can fill: only regular files, and only up to a size cap.
 *
 * Why: `readFile` on a FIFO blocks in libuv's thread pool until a writer shows up, which halted
 * every reload and every Secret write behind it (they are serialised); on `/dev/zero` it reads
 * until memory runs out. So the target is stat'ed first (symlinks followed, as the loader
 * follows them) and anything but a regular file is refused without being opened: opening a
 * device can have effects of its own. The file is then opened non-blocking and checked again
 * through its handle, since the path may have been swapped between the two, and read to at most
 * the cap plus one byte, since a file may grow after its size was read.
 */
import { constants } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';

/**
 * Kubernetes caps an object at 1 MiB (etcd's request limit); a file may hold a few. Far above
 * any real manifest file, far below what hurts the process.
 */
export const MAX_MANIFEST_FILE_BYTES = 4 * 1024 * 1024;

/** A path that exists but is not something we read: not a regular file, or too large. */
export class NotReadableFile extends Error {
  constructor(
    readonly file: string,
    readonly reason: 'not-regular' | 'too-large',
    detail: string,
  ) {
    super(detail);
    this.name = 'NotReadableFile';
  }
}

/** The file's text; ENOENT and other fs errors are thrown as they are, refusals as NotReadableFile. */
export async function readRegularFile(file: string, maxBytes = MAX_MANIFEST_FILE_BYTES): Promise<string> {
  check(file, await stat(file), maxBytes);
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const { size } = await handle.stat().then((info) => check(file, info, maxBytes));
    return await readCapped(handle, file, size, maxBytes);
  } finally {
    await handle.close();
  }
}

/** Reads in pieces sized by the file's stated size, to at most `maxBytes` (a file may grow meanwhile). */
async function readCapped(handle: FileHandle, file: string, size: number, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(Math.max(size + 1, 64 * 1024), maxBytes + 1 - length));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    length += bytesRead;
    if (length > maxBytes) throw tooLarge(file, maxBytes);
  }
  return Buffer.concat(chunks, length).toString('utf8');
}

function check(file: string, info: Stats, maxBytes: number): Stats {
  if (!info.isFile()) throw new NotReadableFile(file, 'not-regular', `is not a regular file (${typeOf(info)}); it is not read`);
  if (info.size > maxBytes) throw tooLarge(file, maxBytes);
  return info;
}

function tooLarge(file: string, maxBytes: number): NotReadableFile {
  return new NotReadableFile(file, 'too-large', `is larger than ${maxBytes / (1024 * 1024)} MiB; it is not read`);
}

function typeOf(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
  return 'not a file';
}
