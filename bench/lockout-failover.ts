/**
 * The lockout across a double failover, repeated (docs/state.md, "Login failure counts across a
 * failover"). Redis Sentinel (one primary, one replica, three sentinels), two svc-server
 * processes of two workers each, a stream of right-password logins (as
 * test/e2e/redis-failover-workers.test.ts), and per sequence: `SENTINEL FAILOVER`, `kill -9` of
 * the new primary 5.7 s after the failover began, the killed node started again (empty).
 *
 * Meanwhile NAMES names, one after the other (STAGGER_MS apart, the first 1 s before the
 * failover, the last after the kill), each sends wrong passwords one at a time over both
 * processes (a fresh connection each) until it is refused: the first refusal should be the
 * attempt after `maxFailCount` failures (5, so the 6th). A name refused later locked out late;
 * sooner, early. So wrong passwords are in flight at the failover, at the kill and in between.
 *
 * Evidence per name that locked out late or early: each attempt (time, process, answer), every
 * command that touched its keys on each data node (MONITOR, which node took each INCR), the
 * sentinels' events (+switch-master, +convert-to-slave, +sdown…) and the throttle's log lines
 * (its switch to memory and back). Each such name is classed:
 *   - memory: an attempt answered 401 reached no data node (counted in a worker's memory);
 *   - lost write: every attempt reached a node, and one of them a node whose data was then
 *     replaced (the primary killed in this sequence, or a node the sentinels made a replica).
 *
 * Usage: npx tsx bench/lockout-failover.ts [--sequences 50] [--names 12] [--gap 150] [--out FILE]
 * Prints one line per sequence and a summary; --out writes every attempt and event as JSON.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { accountsConfigDir, PASSWORDS } from '../test/helpers/accounts-fixture.js';
import { ask, startRedisSentinel, type RedisSentinelPeer } from '../test/helpers/redis-topology.js';
import { cleanRedisEnv, fresh, loginStream, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';

const { values } = parseArgs({
  options: {
    sequences: { type: 'string', default: '50' },
    names: { type: 'string', default: '12' },
    gap: { type: 'string', default: '150' },
    out: { type: 'string' },
  },
});
const SEQUENCES = Number(values.sequences);
const NAMES = Number(values.names);
/** Between one name's attempts. */
const GAP_MS = Number(values.gap);
/** As in the test: from the start of the failover to the kill of the new primary. */
const KILL_AFTER_MS = 5_700;
/** The names start from 1 s before the failover to 2 s after the kill. */
const FIRST_START_MS = -1_000;
const STAGGER_MS = (KILL_AFTER_MS + 2_000 - FIRST_START_MS) / Math.max(1, NAMES - 1);
const MAX_FAIL_COUNT = 5;
/** A name stops after this many attempts without a refusal. */
const MAX_ATTEMPTS = 10;

interface Attempt { readonly at: number; readonly done: number; readonly server: number; readonly status: number }
interface Seen { readonly at: number; readonly node: number; readonly command: string }
interface Logged { readonly at: number; readonly server: number; readonly line: string }
interface NameRun { readonly name: string; readonly attempts: Attempt[]; firstRefusal: number | null }

const monitored: Seen[] = [];
const events: Seen[] = [];
const throttleLines: Logged[] = [];

/**
 * MONITOR on one data node (redis-cli, started again whenever it ends: Sentinel's
 * reconfiguration kills every normal client, monitors included, and a killed node is away for
 * seconds): the commands on the probe names' keys that clients sent, not the replication stream.
 */
function monitorNode(port: number, otherPort: number, running: () => boolean): void {
  const once = () => new Promise<void>((resolve) => {
    const child = spawn('redis-cli', ['-p', String(port), 'monitor'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let partial = '';
    child.stdout.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = /^(\d+\.\d+) \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (m === null || !line.includes(':probe-')) continue;
        const [, time, source, rest] = m as unknown as [string, string, string, string];
        if (source === `127.0.0.1:${otherPort}` || source === 'lua') continue;
        const args = [...rest.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1] ?? '');
        const key = args.find((a) => a.includes(':probe-')) ?? '';
        // svc's scripts, told apart: an attempt counted (INCR) or a count written back (raiseTo).
        const script = args[0] !== 'eval' ? '' : (args[1] ?? '').includes("'INCR'") ? '-incr' : (args[1] ?? '').includes('KEEPTTL') ? '-raise' : '-other';
        monitored.push({ at: Math.round(Number(time) * 1000), node: port, command: `${args[0] ?? ''}${script} ${key} ${args.at(-1) ?? ''}`.slice(0, 200) });
      }
    });
    const stop = setInterval(() => {
      if (!running()) child.kill();
    }, 200);
    child.once('close', () => {
      clearInterval(stop);
      resolve();
    });
  });
  void (async () => {
    while (running()) {
      await once();
      await sleep(50);
    }
  })();
}

/** Every event of one sentinel (PSUBSCRIBE *). */
async function watchSentinel(port: number): Promise<Redis> {
  const r = new Redis({ host: '127.0.0.1', port });
  r.on('error', () => undefined);
  r.on('pmessage', (_pattern: string, channel: string, message: string) => {
    if (channel.startsWith('+') || channel.startsWith('-')) events.push({ at: Date.now(), node: port, command: `${channel} ${message}` });
  });
  await r.psubscribe('*');
  return r;
}

/** The throttle's own log lines of a process and its workers. */
function keepThrottleLines(server: ServerProcess, index: number): void {
  let partial = '';
  const take = (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('login throttle') && !line.includes('failure count')) continue;
      const at = Number(/"time":(\d+)/.exec(line)?.[1] ?? Date.now());
      throttleLines.push({ at, server: index, line: line.slice(0, 400) });
    }
  };
  server.child.stdout.on('data', take);
  server.child.stderr.on('data', take);
}

/** Wrong passwords for `name`, one at a time over both processes, until refused (or MAX_ATTEMPTS). */
async function guess(servers: readonly ServerProcess[], name: string, startAt: number, seqIndex: number): Promise<NameRun> {
  await sleep(Math.max(0, startAt - Date.now()));
  const run: NameRun = { name, attempts: [], firstRefusal: null };
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    const server = (i + seqIndex) % servers.length;
    const at = Date.now();
    const reply = await fresh((servers[server] as ServerProcess).url, 'POST', '/api/v1/session', { username: name, password: 'not-the-password' }).catch(() => ({ status: 0 }));
    run.attempts.push({ at, done: Date.now(), server, status: reply.status });
    if (reply.status === 429) {
      run.firstRefusal = i + 1;
      break;
    }
    await sleep(GAP_MS);
  }
  return run;
}

/** Every sentinel sees a replica it could promote (as the test's replicaCandidate). */
async function replicaCandidate(peer: RedisSentinelPeer): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const views = await Promise.all(peer.sentinels.map((s) => ask(s.port, undefined, (r) => r.call('SENTINEL', 'REPLICAS', peer.masterName) as Promise<string[][]>).catch(() => [])));
    const ok = views.every((replicas) => replicas.some((flat) => flat[flat.indexOf('flags') + 1] === 'slave' && flat[flat.indexOf('master-link-status') + 1] === 'ok'));
    if (ok) return;
    await sleep(100);
  }
  throw new Error('no sentinel-approved replica within 30 s');
}

/** Every worker of `server` back on Redis (fallback 0, connected 1), over several fresh connections. */
async function workersBack(server: ServerProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const bodies = await Promise.all(Array.from({ length: 6 }, () => fresh(server.url, 'GET', '/metrics').then((r) => r.body, () => '')));
    if (bodies.every((b) => /^svc_state_backend_connected 1$/m.test(b) && /^svc_login_throttle_fallback 0$/m.test(b))) return;
    await sleep(250);
  }
  throw new Error(`${server.url}: a worker not back on Redis within 30 s`);
}

type Verdict = 'on time' | 'late' | 'early' | 'unfinished';

function verdictOf(run: NameRun): Verdict {
  if (run.firstRefusal === null) return 'unfinished';
  if (run.firstRefusal > MAX_FAIL_COUNT + 1) return 'late';
  if (run.firstRefusal < MAX_FAIL_COUNT + 1) return 'early';
  return 'on time';
}

/**
 * An attempt is counted on a node when that node ran svc's admission (the INCR script and a GET
 * of the lock in the same millisecond) while the attempt was under way; else it was counted in
 * a worker's memory (Redis away). memory: an attempt answered 401 was counted in memory; lost
 * write: none was, and one was counted on the primary killed in this sequence, before its death.
 */
function classify(run: NameRun, killed: { port: number; at: number }): 'memory' | 'lost write' | 'unexplained' {
  const incrs = monitored.filter((m) => m.command.startsWith(`eval-incr svc:login-failures:${run.name} `));
  const gets = monitored.filter((m) => m.command.startsWith(`get svc:login-locked:${run.name} `));
  const admits = incrs.filter((e) => gets.some((g) => g.node === e.node && Math.abs(g.at - e.at) <= 2));
  let lost = false;
  for (const a of run.attempts.filter((x) => x.status === 401)) {
    const mine = admits.filter((m) => m.at >= a.at - 5 && m.at <= a.done + 5);
    if (mine.length === 0) return 'memory';
    if (mine.some((m) => m.node === killed.port && m.at <= killed.at)) lost = true;
  }
  return lost ? 'lost write' : 'unexplained';
}

function explain(run: NameRun, killed: { port: number; at: number }, t0: number): string {
  const from = (run.attempts[0]?.at ?? 0) - 50;
  const to = (run.attempts.at(-1)?.done ?? 0) + 50;
  const rel = (t: number) => `${((t - t0) / 1000).toFixed(3)}s`;
  const lines = [
    `  ${run.name}: first refusal at attempt ${String(run.firstRefusal)} (${classify(run, killed)}); killed ${killed.port} at ${rel(killed.at)}`,
    ...run.attempts.map((a) => `    attempt ${rel(a.at)}..${rel(a.done)} process ${a.server}: ${a.status}`),
    ...monitored.filter((m) => m.command.includes(`:${run.name} `) || m.command.endsWith(`:${run.name}`)).map((m) => `    node ${m.node} ${rel(m.at)}: ${m.command}`),
    ...events.filter((e) => e.at >= from - 2_000 && e.at <= to && e.node === events[0]?.node).map((e) => `    sentinel ${rel(e.at)}: ${e.command}`),
    ...throttleLines.filter((l) => l.at >= from - 1_000 && l.at <= to).map((l) => `    process ${l.server} ${rel(l.at)}: ${l.line}`),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  console.log(`lockout across SENTINEL FAILOVER + kill -9: ${SEQUENCES} sequences, ${NAMES} names each, ${GAP_MS} ms between a name's attempts; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const peer = await startRedisSentinel();
  const [p1, p2] = peer.nodePorts as [number, number];
  const env = cleanRedisEnv({ SVC_REDIS_SENTINELS: peer.sentinels.map((s) => `${s.host}:${s.port}`).join(','), SVC_REDIS_SENTINEL_MASTER: peer.masterName });
  const dir = accountsConfigDir({ secret: { 'accounts.alice.password': await bcrypt.hash(PASSWORDS.alice, 10) } });
  const servers = await Promise.all([startServerProcess(dir, 2, env), startServerProcess(dir, 2, env)]);
  servers.forEach(keepThrottleLines);
  let monitoring = true;
  monitorNode(p1, p2, () => monitoring);
  monitorNode(p2, p1, () => monitoring);
  const sentinelWatch = await watchSentinel(peer.sentinels[0]?.port as number);
  const stream = loginStream(servers, 'alice', PASSWORDS.alice);
  const tally: Record<Verdict, number> = { 'on time': 0, late: 0, early: 0, unfinished: 0 };
  const sequencesWith = { late: 0, lateNotMemory: 0, early: 0 };
  const causes = new Map<string, number>();
  const record: unknown[] = [];
  const started = Date.now();
  try {
    for (const server of servers) await workersBack(server);
    for (let n = 1; n <= SEQUENCES; n++) {
      await replicaCandidate(peer);
      const t0 = Date.now();
      const guesses = Array.from({ length: NAMES }, (_, k) => guess(servers, `probe-${n}-${k}`, t0 + FIRST_START_MS + k * STAGGER_MS, n + k));
      await sleep(Math.max(0, -FIRST_START_MS));
      const failoverAt = Date.now();
      const promoted = await peer.failover();
      await sleep(Math.max(0, failoverAt + KILL_AFTER_MS - Date.now()));
      await peer.kill(promoted);
      // Once the node is dead: what it took until then is lost.
      const killedAt = Date.now();
      await peer.awaitPrimaryOtherThan(promoted);
      await peer.start(promoted);
      const runs = await Promise.all(guesses);
      await peer.awaitReplicated();
      for (const server of servers) await workersBack(server);
      const verdicts = runs.map(verdictOf);
      for (const v of verdicts) tally[v]++;
      if (verdicts.includes('late')) sequencesWith.late++;
      if (runs.some((r) => verdictOf(r) === 'late' && classify(r, { port: promoted, at: killedAt }) !== 'memory')) sequencesWith.lateNotMemory++;
      if (verdicts.includes('early')) sequencesWith.early++;
      const odd = runs.filter((r) => verdictOf(r) !== 'on time');
      const killed = { port: promoted, at: killedAt };
      for (const r of odd) {
        const cause = `${verdictOf(r)}: ${classify(r, killed)}`;
        causes.set(cause, (causes.get(cause) ?? 0) + 1);
      }
      console.log(`sequence ${n}: ${verdicts.filter((v) => v === 'on time').length}/${runs.length} on time, ${verdicts.filter((v) => v === 'late').length} late, ${verdicts.filter((v) => v === 'early').length} early, ${verdicts.filter((v) => v === 'unfinished').length} unfinished (${Math.round((Date.now() - t0) / 1000)} s, load ${loadavg()[0]?.toFixed(2)})`);
      for (const r of odd) console.log(explain(r, killed, failoverAt));
      record.push({ sequence: n, failoverAt, killedAt, promoted, runs });
    }
  } finally {
    await stream.stop();
    monitoring = false;
    sentinelWatch.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
    await peer.stop();
    if (values.out !== undefined) writeFileSync(values.out, JSON.stringify({ record, monitored, events, throttleLines }, null, 1));
  }
  const failedStream = stream.statuses.filter((s) => s !== 200);
  console.log(`\n${SEQUENCES} sequences in ${Math.round((Date.now() - started) / 1000)} s: ${sequencesWith.late} with a name locked out late (${sequencesWith.lateNotMemory} with one whose attempts were all counted on Redis), ${sequencesWith.early} with one locked out early`);
  console.log(`names: ${tally['on time']} on time, ${tally.late} late, ${tally.early} early, ${tally.unfinished} unfinished`);
  for (const [cause, count] of causes) console.log(`  ${cause}: ${count}`);
  console.log(`right-password logins meanwhile: ${stream.statuses.length}, not 200: ${failedStream.length} (${JSON.stringify([...new Set(failedStream)])}); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}

await main();
