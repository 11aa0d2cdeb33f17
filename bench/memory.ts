/**
 * `npm run bench:memory [-- --load-seconds 20]`: the memory of one svc-server as deploy/ha runs
 * it (the primary and 2 workers, compiled, on Redis), RSS and PSS of each process and in all
 * (/proc/<pid>/smaps_rollup; PSS shares the pages the workers have in common with the primary
 * among them, so the PSS total is what the pod's processes take, where the RSS total counts a
 * shared page once per process). Read idle (5 s after /readyz), as the peak under load (logins at
 * bcrypt cost 10 and proxied requests to a local backend, at once), and 5 s after the load.
 * Twice in the same run: on a config dir, and with --kube on the stand-in Kubernetes API server
 * (the same objects applied by kubectl), the only way @kubernetes/client-node is loaded.
 * docs/benchmarks.md has the figures, deploy/ the requests and limits taken from them. Needs
 * `npm run build`, redis-server and kubectl.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import bcrypt from 'bcryptjs';
import { BCRYPT_COST } from '../src/accounts/passwords.js';
import { configMap, secret, tempConfigDir } from '../test/helpers/manifests.js';
import { freePort, startRedis } from '../test/helpers/peers.js';
import { KUBE_NS, startKubeSvc } from '../test/helpers/kube-svc.js';
import { ROOT } from '../test/helpers/run.js';

const { values } = parseArgs({ options: { 'load-seconds': { type: 'string', default: '20' } } });
const LOAD_MS = Number(values['load-seconds']) * 1000;
if (!Number.isFinite(LOAD_MS) || LOAD_MS < 1000) throw new Error(`--load-seconds: '${String(values['load-seconds'])}' is not a number of seconds of 1 or more`);
const WORKERS = 2;
const SETTLE_MS = 5_000;
const SAMPLE_MS = 250;
/** Login loops and proxy loops running at once under load. */
const LOGIN_LOOPS = 4;
const PROXY_LOOPS = 16;
const PASSWORD = 'bench-memory-password';
const ENTRY = join(ROOT, 'dist/src/commands/svc-server.js');

/** MiB (smaps_rollup's kB / 1024). */
interface Memory {
  readonly rssMb: number;
  readonly pssMb: number;
}
type Reading = ReadonlyMap<string, Memory>;

function smapsRollup(pid: number): Memory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMb: kb('Rss') / 1024, pssMb: kb('Pss') / 1024 };
}

/** The primary's children (the cluster workers), by their parent pid in /proc/<pid>/stat. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // a process that ended while the list was read
    }
  }
  return out.sort((a, b) => a - b);
}

function read(primary: number): Reading {
  const out = new Map<string, Memory>();
  const add = (name: string, pid: number) => {
    const m = smapsRollup(pid);
    if (m !== undefined) out.set(name, m);
  };
  add('primary', primary);
  childrenOf(primary).forEach((pid, i) => add(`worker ${i + 1}`, pid));
  const all = [...out.values()];
  out.set('all', { rssMb: all.reduce((s, m) => s + m.rssMb, 0), pssMb: all.reduce((s, m) => s + m.pssMb, 0) });
  return out;
}

/** Per process, the highest RSS and PSS seen over the samples (the total's peak is the highest sum at one instant). */
function peak(readings: readonly Reading[]): Reading {
  const out = new Map<string, Memory>();
  for (const r of readings) {
    for (const [name, m] of r) {
      const was = out.get(name);
      out.set(name, { rssMb: Math.max(was?.rssMb ?? 0, m.rssMb), pssMb: Math.max(was?.pssMb ?? 0, m.pssMb) });
    }
  }
  return out;
}

function call(url: string, init: { method?: string; body?: string; token?: string; agent?: Agent | false }): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.token !== undefined) headers['authorization'] = `Bearer ${init.token}`;
    const req = request(url, { method: init.method ?? 'GET', agent: init.agent ?? false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/**
 * `bench` holds the token of the proxied requests; `churn` makes the logins under load (an account
 * keeps its 50 newest sessions, and ends the older: the proxy's token would end among them).
 */
async function login(base: string, username: 'bench' | 'churn'): Promise<string> {
  const reply = await call(`${base}/api/v1/session`, { method: 'POST', body: JSON.stringify({ username, password: PASSWORD }) });
  if (reply.status !== 200) throw new Error(`login answered ${reply.status}: ${reply.text.slice(0, 200)}`);
  return (JSON.parse(reply.text) as { token: string }).token;
}

/** Logins (each on a connection of its own, so the primary hands them to either worker) and proxied requests (a kept-alive pool) until `until`. */
async function load(base: string, until: number): Promise<{ logins: number; proxied: number; failed: number }> {
  const token = await login(base, 'bench');
  const agent = new Agent({ keepAlive: true, maxSockets: PROXY_LOOPS });
  const counts = { logins: 0, proxied: 0, failed: 0 };
  let firstFailure: string | undefined;
  const loop = async (kind: 'logins' | 'proxied', one: () => Promise<boolean>) => {
    while (Date.now() < until) {
      const ok = await one().catch((err: unknown) => {
        firstFailure ??= String(err);
        return false;
      });
      counts[ok ? kind : 'failed']++;
    }
  };
  const loginOnce = () => login(base, 'churn').then(() => true);
  const proxyOnce = () =>
    call(`${base}/api/v1/extensions/bench/items`, { token, agent }).then((r) => {
      if (r.status !== 200 || r.text !== 'ok') firstFailure ??= `proxied request answered ${r.status}: ${r.text.slice(0, 200)}`;
      return r.status === 200 && r.text === 'ok';
    });
  await Promise.all([
    ...Array.from({ length: LOGIN_LOOPS }, () => loop('logins', loginOnce)),
    ...Array.from({ length: PROXY_LOOPS }, () => loop('proxied', proxyOnce)),
  ]);
  agent.destroy();
  if (firstFailure !== undefined) console.log(`first failure: ${firstFailure}`);
  return counts;
}

function manifests(backendPort: number): Record<string, string> {
  const hash = bcrypt.hashSync(PASSWORD, BCRYPT_COST);
  return {
    'svc-cm.yaml': configMap('svc-cm', {
      'accounts.bench': 'login',
      'accounts.churn': 'login',
      'extension.config': `extensions:\n  - name: bench\n    enabled: true\n    backend:\n      services:\n        - url: http://127.0.0.1:${backendPort}\n`,
    }),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': 'p, role:bench, extensions, *, */bench, allow\ng, bench, role:bench\n' }),
    'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'bench-memory-secret-key-0123456789abcdef', 'admin.password': hash, 'accounts.bench.password': hash, 'accounts.churn.password': hash }),
  };
}

async function waitReady(base: string, child: ChildProcess, logs: () => string): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc-server exited ${child.exitCode}:\n${logs()}`);
    const ok = await call(`${base}/readyz`, {}).then((r) => r.status === 200, () => false);
    if (ok && childrenOf(child.pid ?? 0).length === WORKERS) return;
    if (Date.now() > end) throw new Error(`svc-server not ready in 60 s:\n${logs()}`);
    await sleep(100);
  }
}

interface Run {
  readonly idle: Reading;
  readonly loaded: Reading;
  readonly after: Reading;
  readonly counts: { logins: number; proxied: number; failed: number };
}

async function measure(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [ENTRY, ...args, '--listen', `127.0.0.1:${port}`, '--workers', String(WORKERS)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (d: Buffer) => (tail = (tail + d.toString()).slice(-8_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  try {
    await waitReady(base, child, () => tail);
    await sleep(SETTLE_MS);
    const idle = read(child.pid ?? 0);
    const samples: Reading[] = [];
    const sampler = setInterval(() => samples.push(read(child.pid ?? 0)), SAMPLE_MS);
    const counts = await load(base, Date.now() + LOAD_MS);
    clearInterval(sampler);
    await sleep(SETTLE_MS);
    return { idle, loaded: peak(samples), after: read(child.pid ?? 0), counts };
  } finally {
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('close', () => resolve());
      child.kill('SIGTERM');
    });
  }
}

function print(name: string, run: Run): void {
  console.log(`\n${name}: ${run.counts.logins} logins and ${run.counts.proxied} proxied requests in ${LOAD_MS / 1000} s, ${run.counts.failed} failed`);
  console.log(`${'process'.padEnd(10)} ${'idle RSS'.padStart(9)} ${'idle PSS'.padStart(9)} ${'load RSS'.padStart(9)} ${'load PSS'.padStart(9)} ${'after RSS'.padStart(10)} ${'after PSS'.padStart(10)}   (MiB; load: the peak)`);
  for (const proc of run.idle.keys()) {
    const f = (r: Reading, k: keyof Memory, w: number) => (r.get(proc)?.[k]?.toFixed(0) ?? '-').padStart(w);
    console.log(`${proc.padEnd(10)} ${f(run.idle, 'rssMb', 9)} ${f(run.idle, 'pssMb', 9)} ${f(run.loaded, 'rssMb', 9)} ${f(run.loaded, 'pssMb', 9)} ${f(run.after, 'rssMb', 10)} ${f(run.after, 'pssMb', 10)}`);
  }
}

if (!existsSync(ENTRY)) {
  console.error('run `npm run build` first');
  process.exit(1);
}

const backend: Server = createServer((_req, res) => res.end('ok'));
const backendPort = await freePort();
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
const redis = await startRedis();
const files = manifests(backendPort);
const configDir = tempConfigDir(files);
const kube = await startKubeSvc({ workPrefix: 'svc-bench-memory-' });
const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_REDIS_URL: redis.url, SVC_LOG_LEVEL: 'warn' };
try {
  for (const [file, text] of Object.entries(files)) {
    writeFileSync(join(configDir, `apply-${file}`), text);
    await kube.kubectl.run(['apply', '--validate=false', '-f', join(configDir, `apply-${file}`)]);
    rmSync(join(configDir, `apply-${file}`));
  }
  console.log(`svc-server (compiled), primary + ${WORKERS} workers on Redis; ${process.version}; load: ${LOGIN_LOOPS} login loops + ${PROXY_LOOPS} proxy loops`);
  const dir = await measure(['--config', configDir], env);
  print('config dir (no --kube)', dir);
  const cluster = await measure(['--kube', '--kubeconfig', kube.kubeconfig, '--namespace', KUBE_NS], env);
  print('--kube (stand-in API server)', cluster);
  const all = (r: Run, at: keyof Run) => (r[at] as Reading).get('all');
  const diff = (at: 'idle' | 'loaded', k: keyof Memory) => ((all(cluster, at)?.[k] ?? NaN) - (all(dir, at)?.[k] ?? NaN)).toFixed(0);
  console.log(`\n--kube minus config dir, all processes: idle RSS ${diff('idle', 'rssMb')} MiB, PSS ${diff('idle', 'pssMb')} MiB; under load RSS ${diff('loaded', 'rssMb')} MiB, PSS ${diff('loaded', 'pssMb')} MiB`);
} finally {
  await kube.close();
  await redis.stop();
  rmSync(configDir, { recursive: true, force: true });
  backend.close();
}
