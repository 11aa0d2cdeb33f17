/**
 * The processes behind bench/sso-login.ts: the peers from scripts/peers (slapd, Redis,
 * LemonLDAP::NG), svc as its own compiled child process, and the CPU time each one used, read
 * from /proc by process group (every peer and the svc child lead their own group, so preforked
 * workers and cluster workers are counted with their parent).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, open, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PEERS = join(ROOT, 'scripts', 'peers');
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

export interface Peer { readonly pidFile: string; readonly dir: string }
const peers: Peer[] = [];
const tempDirs: string[] = [];
/** svc and the bare provider: each leads its own process group, stopped by cleanUp(). */
const children: ChildProcess[] = [];

function run(script: string, args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', [join(PEERS, script), ...args], { timeout: 60_000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      if (err === null) resolve(stdout);
      else reject(new Error(`${script}: ${stderr.trim() || err.message}`));
    });
  });
}

export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `bench-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

export async function startPeer(script: string, args: readonly string[], env: Record<string, string> = {}): Promise<Peer> {
  const dir = await tempDir(script.replace(/\.sh$/, ''));
  const out = await run(script, [dir, ...args], env);
  const peer = { pidFile: out.trim().split('\n').at(-1) ?? '', dir };
  peers.push(peer);
  return peer;
}

export async function pidOf(peer: Peer): Promise<number> {
  return Number((await readFile(peer.pidFile, 'utf8')).trim());
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface SvcOptions {
  readonly configDir: string;
  readonly port: number;
  readonly workers: number;
  readonly redisUrl?: string;
  /** Write V8 CPU profiles of every svc process here (node --cpu-prof). */
  readonly cpuProfDir?: string;
  /** Another checkout's compiled build (its dist/), to compare two versions; built by hand. */
  readonly root?: string;
  /** Further environment (OTEL_ variables for the tracing phases). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * `node dist/src/commands/svc-server.js serve` as it runs in production, built first when the
 * sources are newer (scripts/ensure-built.mjs), in its own process group; resolves once
 * /healthz answers. Its log (level warn) goes to a file whose tail is shown if it fails.
 */
export async function startSvc(options: SvcOptions): Promise<{ pid: number; log: string }> {
  const root = options.root ?? ROOT;
  if (options.root === undefined) execFileSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: ROOT, stdio: 'inherit' });
  const log = join(await tempDir('svc-log'), 'svc.log');
  const out = await open(log, 'w');
  const child = spawn(process.execPath, [
    ...(options.cpuProfDir !== undefined ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : []),
    'dist/src/commands/svc-server.js', 'serve', '--config', options.configDir, '--listen', `127.0.0.1:${options.port}`,
    '--workers', String(options.workers), ...(options.redisUrl !== undefined ? ['--redis', options.redisUrl] : []),
  ], { cwd: root, detached: true, stdio: ['ignore', out.fd, out.fd], env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...options.env } });
  await out.close();
  children.push(child);
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  for (let i = 0; i < 300 && exited === undefined; i++) {
    const ok = await fetch(`http://127.0.0.1:${options.port}/healthz`).then((r) => r.ok, () => false);
    if (ok) return { pid: child.pid ?? 0, log };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`svc did not answer /healthz (${exited ?? 'no answer in 30 s'}); log:\n${await tail(log)}`);
}

export async function tail(file: string, lines = 20): Promise<string> {
  return (await readFile(file, 'utf8').catch(() => '')).trim().split('\n').slice(-lines).join('\n');
}

/** SIGTERM to a child's group (svc's primary and any cluster workers); SIGKILL after 15 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(-child.pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), 15_000);
  });
  if ((await Promise.race([gone, late])) === 'late') process.kill(-child.pid, 'SIGKILL');
  clearTimeout(timer);
}

/**
 * bench/bare-provider.ts in its own process group on `port`, with `chains` seeded refresh tokens
 * for the client 'bench' and `secret`; resolves with its pid and the tokens once it listens.
 * `ldap`: the refresh floor, the provider asking svc's LDAP connector at each refresh (its header).
 */
export async function startBareProvider(port: number, chains: number, secret: string, ldap?: { config: unknown; users: readonly (readonly [string, string])[] }): Promise<{ pid: number; tokens: string[] }> {
  // BENCH_BARE_CPU_PROF=DIR: a V8 CPU profile of the provider alone, to read beside svc's (--svc-cpu-prof).
  const profile = process.env['BENCH_BARE_CPU_PROF'];
  const prof = profile === undefined || profile === '' ? [] : ['--cpu-prof', '--cpu-prof-dir', profile];
  const child = spawn(process.execPath, [...prof, '--import', 'tsx', 'bench/bare-provider.ts', String(port), String(chains), secret], {
    cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, BENCH_BARE_LDAP: ldap === undefined ? '' : JSON.stringify(ldap) },
  });
  children.push(child);
  let output = '';
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-2000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the bare provider did not start in 30 s: ${errors}`)), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the bare provider exited with ${code}: ${errors}`));
    });
    let started = false;
    // Read to the end, so that later notices of the library never fill the pipe.
    child.stdout?.on('data', (chunk: Buffer) => {
      if (started) return;
      output += chunk.toString();
      const line = output.split('\n').find((l, i, all) => l.startsWith('[') && i < all.length - 1);
      if (line === undefined) return;
      started = true;
      clearTimeout(timer);
      resolve({ pid: child.pid ?? 0, tokens: JSON.parse(line) as string[] });
    });
  });
}

export async function cleanUp(): Promise<void> {
  for (const child of children.splice(0)) await stopChild(child).catch(() => undefined);
  for (const peer of peers.splice(0).reverse()) await run('stop-peer.sh', [peer.pidFile]).catch(() => undefined);
  for (const dir of tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

/** CPU seconds (user + system, reaped children included) of every process in these groups. */
export async function groupCpuSeconds(groups: ReadonlyMap<string, number>): Promise<Map<string, number>> {
  const totals = new Map<string, number>([...groups.keys()].map((name) => [name, 0]));
  const byGroup = new Map([...groups].map(([name, pgid]) => [pgid, name]));
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // Fields after "(comm)": state ppid pgrp ... utime(12th) stime cutime cstime.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const name = byGroup.get(Number(fields[2]));
    if (name === undefined) continue;
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
    totals.set(name, (totals.get(name) ?? 0) + ticks / CLOCK_TICKS);
  }
  return totals;
}
