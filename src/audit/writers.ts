/**
 * Where audit lines are written: a descriptor svc does not own (stdout, beside the operational
 * log; stderr for the offline commands, whose stdout is their answer), or a file opened in
 * append mode, created 0600, and reopened on demand (SIGHUP, after logrotate's `mv`).
 *
 * Writes go through libuv's thread pool (fs.write), never the event loop: a stalled reader holds
 * one pool thread and the drain, and the queue in front (queue.ts) drops and counts.
 */
import { write as writeFd } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditSinkLog, AuditWriter } from './queue.js';

/** A non-blocking pipe that is full answers EAGAIN: try again this much later, never spin. */
const RETRY_FULL_PIPE_MS = 10;

export function descriptorWriter(fd: number): AuditWriter {
  return {
    async write(text) {
      let rest = Buffer.from(text);
      while (rest.length > 0) {
        try {
          const written = await new Promise<number>((resolve, reject) => writeFd(fd, rest, (err, n) => (err !== null ? reject(err) : resolve(n))));
          rest = rest.subarray(written);
        } catch (err: unknown) {
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
          await sleep(RETRY_FULL_PIPE_MS);
        }
      }
    },
    close: () => Promise.resolve(),
  };
}

export interface FileAuditWriter extends AuditWriter {
  /** Opens the file now: a path svc cannot write stops the start rather than losing the trail. */
  open(): Promise<void>;
  /** The next write goes to a file opened anew at the same path (after a rotation moved the old one). */
  reopen(): void;
}

export const AUDIT_FILE_MODE = 0o600;

export function fileWriter(path: string, log: Pick<AuditSinkLog, 'warn' | 'info'>): FileAuditWriter {
  let handle: Promise<FileHandle> | undefined;
  let reopenAsked = false;

  async function openFile(): Promise<FileHandle> {
    const file = await open(path, 'a', AUDIT_FILE_MODE);
    // The mode applies only to a file this open created: an older file keeps a wider one, so narrow it.
    await file.chmod(AUDIT_FILE_MODE).catch((err: unknown) => log.warn({ err, file: path }, `audit log ${path}: could not set its mode to 0600; check who may read it`));
    return file;
  }

  async function current(): Promise<FileHandle> {
    if (reopenAsked) {
      reopenAsked = false;
      const old = handle;
      handle = openFile();
      if (old !== undefined) await (await old).close().catch(() => undefined);
      log.info({ file: path }, 'audit log reopened');
    }
    handle ??= openFile().catch((err: unknown) => {
      // Tried again at the next write: the lost lines are counted as dropped by the queue.
      handle = undefined;
      throw err;
    });
    return handle;
  }

  return {
    async write(text) {
      const file = await current();
      await file.appendFile(text);
    },
    async open() {
      await current();
    },
    reopen() {
      reopenAsked = true;
    },
    async close() {
      if (handle !== undefined) await (await handle).close();
      handle = undefined;
    },
  };
}
