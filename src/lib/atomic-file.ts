/**
 * Whole-file writes that a reader (this process, another one, or `git`) never sees half done:
 * the text goes to a temp file in the same directory (so rename stays on one filesystem), is
 * fsync'ed (so a crash cannot leave an empty file behind a completed rename), then takes the
 * target's name in one step. The directory is fsync'ed after that: the new name lives in the
 * directory, and until the directory reaches the disk a power loss can bring back the old file
 * after the write was acknowledged.
 */
import { randomBytes } from 'node:crypto';
import { link, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { errorCode } from './file-lock.js';

export interface AtomicWriteOptions {
  readonly mode: number;
  /** Fail with EEXIST instead of replacing an existing file. */
  readonly exclusive?: boolean;
}

export async function writeFileAtomic(target: string, text: string, options: AtomicWriteOptions): Promise<void> {
  // A leading dot keeps the temp file out of the store's view (dot files are skipped).
  const temp = path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
  const handle = await open(temp, 'wx', options.mode);
  try {
    try {
      await handle.writeFile(text);
      await handle.chmod(options.mode); // open's mode is filtered by the umask
      await handle.sync();
    } finally {
      await handle.close();
    }
    // link(2) fails if the target exists, which rename(2) would silently replace.
    if (options.exclusive === true) await link(temp, target);
    else await rename(temp, target);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  await syncDirectory(path.dirname(target));
}

/**
 * Platforms that cannot fsync a directory say so (EISDIR, EINVAL, or EPERM/ENOTSUP on some
 * filesystems; Windows refuses to open one), as does a directory we may write but not read
 * (EACCES): there is nothing more we can do there, and the rename itself has happened, so the
 * write is not failed for it.
 */
const DIRECTORY_SYNC_UNSUPPORTED = new Set(['EISDIR', 'EINVAL', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EACCES']);

async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
  } catch (err: unknown) {
    if (DIRECTORY_SYNC_UNSUPPORTED.has(errorCode(err) ?? '')) return;
    throw err;
  }
  try {
    await handle.sync();
  } catch (err: unknown) {
    if (!DIRECTORY_SYNC_UNSUPPORTED.has(errorCode(err) ?? '')) throw err;
  } finally {
    await handle.close();
  }
}
