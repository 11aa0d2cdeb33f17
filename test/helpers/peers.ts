/**
 * Real third-party peers for tests (Redis, slapd, nginx, a node backend), started on
 * loopback by scripts/peers/*.sh in a private temp dir. A missing binary FAILS the test with
 * the Debian package to install: never a skip.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PEERS_DIR = fileURLToPath(new URL('../../scripts/peers/', import.meta.url));
const START_TIMEOUT_MS = 30_000;
/** Exit status of a start script whose binary is missing (scripts/peers/lib.sh `need`). */
const MISSING_BINARY = 127;

/**
 * Ports handed out are taken below the kernel's ephemeral range (ip_local_port_range, from
 * 32768 by default). listen(0) picks them from inside that range, where any outgoing
 * connection of any process may take the port between this check and the peer's own bind, and
 * the peer then fails to start. From 10240 to 22767, so that a Redis Cluster node's bus port (its port + 10000) stays below the
 * range as well.
 */
const PORT_RANGE = { from: 10_240, to: 22_767 } as const;
/**
 * Test files run side by side in mocha's worker processes (MOCHA_WORKER_ID 0, 1, ...), and a
 * port is free-checked here but bound later by the peer: each worker draws from its own quarter
 * of the range, so two workers never hand out the same port. Run serially, the whole range.
 */
const SLICES = 4;
export function portSlice(workerId: string | undefined): { readonly from: number; readonly to: number } {
  const id = Number(workerId);
  if (workerId === undefined || workerId === '' || !Number.isInteger(id) || id < 0) return PORT_RANGE;
  const size = Math.floor((PORT_RANGE.to - PORT_RANGE.from + 1) / SLICES);
  const from = PORT_RANGE.from + (id % SLICES) * size;
  return { from, to: from + size - 1 };
}
const PORTS = portSlice(process.env['MOCHA_WORKER_ID']);
/** Given out by this process already (and their bus ports): never given twice. */
const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port that was free a moment ago on 127.0.0.1, outside the ephemeral range, not given out before by this process. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = PORTS.from + Math.floor(Math.random() * (PORTS.to - PORTS.from + 1));
    if (handedOut.has(port) || handedOut.has(port + 10_000) || handedOut.has(port - 10_000)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port on 127.0.0.1 between ${String(PORTS.from)} and ${String(PORTS.to)} after 200 tries`);
}

export interface Peer {
  /** The pid file the start script printed as its last stdout line. */
  readonly pidFile: string;
  /** The peer's private dir (config, data, logs); removed by stop(). */
  readonly dir: string;
  /** Stops the peer (its whole process group) and removes its dir; idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs scripts/peers/<script> with a fresh temp dir as first argument, then `args`, with `env`
 * added to the environment (the scripts' own knobs, e.g. start-slapd.sh's USERS_LDIF).
 * Rejects with the script's stderr when it fails, and with an install hint when the peer's
 * binary is missing.
 */
export async function startPeer(script: string, args: readonly string[] = [], env: Readonly<Record<string, string>> = {}): Promise<Peer> {
  const dir = await mkdtemp(join(tmpdir(), `svc-${script.replace(/\.sh$/, '')}-`));
  let stdout: string;
  try {
    stdout = await runScript(script, [dir, ...args], START_TIMEOUT_MS, env);
  } catch (err: unknown) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const pidFile = stdout.trim().split('\n').at(-1) ?? '';
  if (pidFile === '') throw new Error(`${script} printed no pid file`);
  let stopped: Promise<void> | undefined;
  return {
    pidFile,
    dir,
    stop() {
      stopped ??= (async () => {
        await runScript('stop-peer.sh', [pidFile], START_TIMEOUT_MS);
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

function runScript(script: string, args: readonly string[], timeout: number, env: Readonly<Record<string, string>> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', [join(PEERS_DIR, script), ...args], { timeout, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      if (err === null) return resolve(stdout);
      const detail = stderr.trim() || err.message;
      if (err.code === MISSING_BINARY) {
        return reject(new Error(`cannot start peer (${script}): ${detail}`, { cause: err }));
      }
      reject(new Error(`${script} ${args.slice(1).join(' ')} failed (exit ${String(err.code)}): ${detail}`, { cause: err }));
    });
  });
}

export interface RedisPeer {
  readonly url: string;
  readonly port: number;
  /** The running server's pid file; undefined while stopped. */
  readonly pidFile: string | undefined;
  /** Stops redis-server (the port stays reserved for restart()); idempotent. */
  stop(): Promise<void>;
  /** Starts an empty redis-server on the same port; stops the running one first. */
  restart(): Promise<void>;
}

/** A private, non-persistent redis-server on a free loopback port. */
export async function startRedis(): Promise<RedisPeer> {
  const port = await freePort();
  let peer: Peer | undefined = await startPeer('start-redis.sh', [String(port)]);
  async function stop(): Promise<void> {
    const running = peer;
    peer = undefined;
    await running?.stop();
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pidFile() {
      return peer?.pidFile;
    },
    stop,
    async restart() {
      await stop();
      peer = await startPeer('start-redis.sh', [String(port)]);
    },
  };
}
