/**
 * `svc-server` as an operator runs it: its own OS process (a node:cluster primary with
 * `--workers` workers), on a config dir and the Redis options of `env`, on a free loopback port.
 * Requests through `fresh()` open a new connection each, so that the primary hands them to its
 * workers in turn (a kept-alive connection stays on one worker).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './peers.js';
import { ROOT } from './run.js';

export const SERVER_CLI = 'src/commands/svc-server.ts';

export interface ServerProcess {
  readonly url: string;
  readonly child: ChildProcessWithoutNullStreams;
  /** The last lines the process and its workers wrote (stdout and stderr). */
  logTail(): string;
  stop(): Promise<void>;
}

export interface FreshReply {
  readonly status: number;
  readonly body: string;
}

/** The environment without any Redis setting of the machine running the tests, plus `extra`. */
export function cleanRedisEnv(extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('SVC_REDIS')) delete env[name];
  return { ...env, ...extra };
}

const LOG_TAIL_CHARS = 12_000;

/** Starts the server and resolves once /healthz answers 200 (within 60 s). */
export async function startServerProcess(configDir: string, workers: number, env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER_CLI, '--config', configDir, '--listen', `127.0.0.1:${port}`, '--workers', String(workers)], { cwd: ROOT, env });
  let tail = '';
  const keep = (d: Buffer) => (tail = (tail + d.toString()).slice(-LOG_TAIL_CHARS));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const self: ServerProcess = {
    url,
    child,
    logTail: () => tail,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`svc-server exited (${child.exitCode}): ${tail}`);
    if ((await fresh(url, 'GET', '/healthz').catch(() => ({ status: 0 }))).status === 200) return self;
    await sleep(200);
  }
  await self.stop();
  throw new Error(`svc-server did not answer /healthz within 60 s: ${tail}`);
}

/** One request on a connection of its own (closed after the answer). */
export function fresh(base: string, method: string, path: string, body?: unknown): Promise<FreshReply> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(new URL(path, base), {
      method,
      agent: false,
      timeout: 10_000,
      headers: { connection: 'close', ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}
