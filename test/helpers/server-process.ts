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
import { ROOT, entryArgs, SERVER_ENTRY } from './run.js';

export interface ServerProcess {
  readonly url: string;
  readonly child: ChildProcessWithoutNullStreams;
  /** The last lines the process and its workers wrote (stdout and stderr). */
  logTail(): string;
  /** Each distinct error the process and its workers logged (level error or worse: message and cause), with its count. */
  errors(): ReadonlyMap<string, number>;
  /**
   * The last lines logged at warn level or worse, and the login throttle's own lines (its switch
   * to memory and back, at warn and info), as written: what to show when a check after a fault fails.
   */
  warnings(): readonly string[];
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
/** Warning lines kept for warnings(): the audit lines of a login stream push them out of logTail(). */
const WARNINGS_KEPT = 40;

/** Starts the server and resolves once /healthz answers 200 (within 60 s); on `port` when given (the config's url names it). */
export async function startServerProcess(configDir: string, workers: number, env: NodeJS.ProcessEnv, givenPort?: number): Promise<ServerProcess> {
  const port = givenPort ?? await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--config', configDir, '--listen', `127.0.0.1:${port}`, '--workers', String(workers)], { cwd: ROOT, env });
  let tail = '';
  let partial = '';
  const errors = new Map<string, number>();
  const warnings: string[] = [];
  const keep = (d: Buffer) => {
    const text = d.toString();
    tail = (tail + text).slice(-LOG_TAIL_CHARS);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const error = loggedError(line);
      if (error !== undefined) errors.set(error, (errors.get(error) ?? 0) + 1);
      if (isWarning(line)) {
        warnings.push(line.slice(0, 1_000));
        if (warnings.length > WARNINGS_KEPT) warnings.shift();
      }
    }
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const self: ServerProcess = {
    url,
    child,
    logTail: () => tail,
    errors: () => errors,
    warnings: () => warnings,
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

/** A JSON log line of level warn (40) or worse, or one of the login throttle's. */
function isWarning(line: string): boolean {
  return /^\{"level":(4|5|6)\d\b/.test(line) || (line.startsWith('{"level":') && line.includes('"msg":"login throttle: '));
}

/** A JSON log line of level error (50) or worse, as `msg: err.message`; undefined for any other line. */
function loggedError(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
    if ((entry.level ?? 0) < 50) return undefined;
    return `${entry.msg ?? ''}: ${entry.err?.message ?? ''}`;
  } catch {
    return undefined;
  }
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

/** Logins of one account on the processes in turn (three at a time, each on a fresh connection) until stopped: the statuses they got. */
export function loginStream(servers: readonly ServerProcess[], username: string, password: string): { readonly statuses: number[]; stop(): Promise<void> } {
  const statuses: number[] = [];
  let running = true;
  const loop = async (offset: number) => {
    for (let i = offset; running; i++) {
      const server = servers[i % servers.length] as ServerProcess;
      const reply = await fresh(server.url, 'POST', '/api/v1/session', { username, password }).catch(() => ({ status: 0 }));
      statuses.push(reply.status);
      await sleep(10);
    }
  };
  const loops = [loop(0), loop(1), loop(2)];
  return {
    statuses,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
