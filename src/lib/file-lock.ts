/**
 * Serialising writers: an in-process queue, and a lock file that works across processes.
 *
 * Why a lock file and not flock(2): Node has no portable advisory lock, and a lock file made with
 * O_EXCL (`open(path, 'wx')`) is atomic on every local filesystem. Its weakness is a crashed
 * holder; a lock older than `staleMs` is therefore broken. Writers hold it for milliseconds (one
 * read-modify-write of a small file), so 10 s is far beyond any honest holder.
 */
import { randomBytes } from 'node:crypto';
import { open, stat, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { NotReadableFile, readRegularFile } from './regular-file.js';

export const LOCK_STALE_MS = 10_000;
export const LOCK_TIMEOUT_MS = 30_000;

/** The lock stayed held past the wait; callers map it to their own error (svc's store: a 503). */
export class LockTimeout extends Error {
  override readonly name = 'LockTimeout';
}

export interface LockOptions {
  readonly staleMs?: number;
  readonly timeoutMs?: number;
}

/** Runs `fn` with `<target>.lock` held, then removes the lock (only if it is still ours). */
export async function withFileLock<T>(target: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const lockPath = `${target}.lock`;
  const token = await acquire(lockPath, options.staleMs ?? LOCK_STALE_MS, options.timeoutMs ?? LOCK_TIMEOUT_MS);
  try {
    return await fn();
  } finally {
    await release(lockPath, token);
  }
}

async function acquire(lockPath: string, staleMs: number, timeoutMs: number): Promise<string> {
  const token = `${process.pid} ${randomBytes(8).toString('hex')} ${new Date().toISOString()}\n`;
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    if (await tryCreate(lockPath, token)) return token;
    await breakIfStale(lockPath, staleMs);
    if (Date.now() - started > timeoutMs) {
      throw new LockTimeout(`timed out after ${timeoutMs} ms waiting for the lock file ${lockPath}, which another writer holds; try again`);
    }
    // Short first waits (writers hold the lock for a few ms), growing to 50 ms, with jitter so
    // that two waiters do not retry in lockstep.
    const backoff = Math.min(50, 1 + 1.5 ** attempt);
    await sleep(backoff / 2 + Math.random() * backoff);
  }
}

async function tryCreate(lockPath: string, token: string): Promise<boolean> {
  try {
    const handle = await open(lockPath, 'wx', 0o600);
    try {
      await handle.writeFile(token);
    } finally {
      await handle.close();
    }
    return true;
  } catch (err: unknown) {
    if (errorCode(err) === 'EEXIST') return false;
    throw err;
  }
}

/**
 * Removes a lock older than `staleMs`. Breakers take turns through a second lock file and judge
 * staleness again once they hold it: a waiter that saw the crashed holder's lock could otherwise
 * remove the fresh lock another waiter took right after breaking it, and both would write. A
 * breaker that crashed mid-break leaves `.breaking` behind, which is then as stale as any lock.
 */
async function breakIfStale(lockPath: string, staleMs: number): Promise<void> {
  if (!(await isStale(lockPath, staleMs))) return;
  const breaker = `${lockPath}.breaking`;
  if (!(await tryCreate(breaker, `${process.pid} ${randomBytes(8).toString('hex')}\n`))) {
    if (await isStale(breaker, staleMs)) await unlinkIfPresent(breaker);
    return;
  }
  try {
    if (await isStale(lockPath, staleMs)) await unlinkIfPresent(lockPath);
  } finally {
    await unlinkIfPresent(breaker);
  }
}

async function isStale(path: string, staleMs: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(path)).mtimeMs > staleMs;
  } catch (err: unknown) {
    if (errorCode(err) === 'ENOENT') return false;
    throw err;
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err: unknown) {
    if (errorCode(err) !== 'ENOENT') throw err;
  }
}

async function release(lockPath: string, token: string): Promise<void> {
  try {
    // If we overran staleMs and someone broke our lock, the file is theirs now: leave it.
    // Ours is a regular file of a few bytes; whatever else sits there (a FIFO) is not read, nor ours.
    if ((await readRegularFile(lockPath, 1024)) === token) await unlinkIfPresent(lockPath);
  } catch (err: unknown) {
    if (err instanceof NotReadableFile) return;
    if (errorCode(err) !== 'ENOENT') throw err;
  }
}

/** Runs queued tasks one at a time, in call order; a failed task does not stop the queue. */
export type SerialQueue = <T>(task: () => Promise<T>) => Promise<T>;

export function createSerialQueue(): SerialQueue {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

export function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}
