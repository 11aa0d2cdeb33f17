/**
 * Starts and stops ./replica.ts as its own OS process: one svc replica for the multi-replica
 * tests, listening on a free loopback port, on the given config dir and Redis.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { ROOT } from './run.js';

export interface Replica {
  /** Where this replica listens (not necessarily the `url` in its config). */
  readonly url: string;
  readonly child: ChildProcessWithoutNullStreams;
  /** A mark in the replica's log (warnings and errors), for logSince. */
  logMark(): number;
  /** What the replica logged since `mark` (0: since it started), as much of it as the kept tail holds. */
  logSince(mark: number): string;
}

/** How much of a replica's log a test keeps: enough for the lines around a failure. */
const LOG_TAIL_CHARS = 8_000;

/** `env` is added to the test's own environment (limits read at start). */
export function startReplica(configDir: string, redisUrl: string, env: Readonly<Record<string, string>> = {}): Promise<Replica> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/replica.ts', configDir, redisUrl], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    let logged = 0;
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      logged += text.length;
      err = (err + text).slice(-LOG_TAIL_CHARS);
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const url = /^url (\S+)$/m.exec(out)?.[1];
      if (url !== undefined) {
        const logSince = (mark: number): string => {
          const since = Math.min(err.length, logged - mark);
          return since === 0 ? '' : err.slice(-since);
        };
        resolve({ url, child, logMark: () => logged, logSince });
      }
    });
    child.on('exit', (code) => reject(new Error(`replica exited (${String(code)}): ${err}`)));
  });
}

/** Ends the replica's stdin, which makes it close cleanly; resolves when it has exited. */
export function stopReplica(replica: Replica | undefined): Promise<void> {
  if (replica === undefined || replica.child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    replica.child.once('exit', () => resolve());
    replica.child.stdin.end();
  });
}
