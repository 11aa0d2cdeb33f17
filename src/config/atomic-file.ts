/**
 * Whole-file writes that a reader (this process, another one, or `git`) never sees half done:
 * the text goes to a temp file in the same directory (so rename stays on one filesystem), is
 * fsync'ed (so a crash cannot leave an empty file behind a completed rename), then takes the
 * target's name in one step.
 */
import { randomBytes } from 'node:crypto';
import { link, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

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
}
