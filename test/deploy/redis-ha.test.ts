/**
 * deploy/ha's Redis on real processes: three nodes and three Sentinels on loopback, each started
 * by deploy/ha/redis-start.sh (the file the StatefulSet's containers run), each pod's data dir
 * kept across restarts as its volume is. A node killed (kill -9) and started again at once by the
 * same script, as the kubelet restarts a container, comes back as a replica of the primary the
 * Sentinels elect, never as a primary with its own old or empty data, and a lockout written
 * before is still there, on the primary and on it (issue 52, finding 2). Started alone, the
 * script makes a node the primary only on the first start of the set.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/peers.js';
import { ask } from '../helpers/redis-topology.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const SCRIPT = fileURLToPath(new URL('../../deploy/ha/redis-start.sh', import.meta.url));
const PASSWORD = 'redis-ha-test-password';
const MASTER = 'svc';
/** The key svc's login throttle writes for a locked account (the backend adds `svc:`). */
const LOCKOUT = 'svc:login-locked:alice';
/** Long enough that a restart "at once" lands within it; the forced failover does not wait for it. */
const DOWN_AFTER_MS = 3_000;

interface Pod {
  readonly node: number;
  readonly sentinel: number;
  readonly dir: string;
}

type Mode = 'redis' | 'sentinel';

/** Processes started by the script (it execs the server, so the pid is the server's). */
const running = new Map<string, ChildProcess>();

function addr(port: number): string {
  return `127.0.0.1:${String(port)}`;
}

function start(pods: readonly Pod[], pod: Pod, mode: Mode): ChildProcess {
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    REDIS_PASSWORD: PASSWORD,
    REDIS_NODES: pods.map((p) => addr(p.node)).join(' '),
    REDIS_SENTINELS: pods.map((p) => addr(p.sentinel)).join(' '),
    SELF_NODE: addr(pod.node),
    SELF_SENTINEL: addr(pod.sentinel),
    DATA_DIR: pod.dir,
    MASTER_NAME: MASTER,
    DOWN_AFTER_MS: String(DOWN_AFTER_MS),
    FAILOVER_TIMEOUT_MS: '5000',
  };
  // Loopback only; a full sync that starts at once (the default waits 5 s for more replicas).
  const extra = mode === 'redis' ? ['--repl-diskless-sync-delay', '0'] : [];
  const out = openSync(join(pod.dir, `${mode}.out`), 'a');
  try {
    const child = spawn('sh', [SCRIPT, mode, '--bind', '127.0.0.1', '--logfile', join(pod.dir, `${mode}.log`), ...extra], { env, stdio: ['ignore', out, out] });
    running.set(`${mode}-${String(pod.node)}`, child);
    return child;
  } finally {
    closeSync(out);
  }
}

async function kill9(pod: Pod, mode: Mode): Promise<void> {
  const child = running.get(`${mode}-${String(pod.node)}`);
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) throw new Error(`${mode} of ${String(pod.node)} is not running`);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function stopAll(): Promise<void> {
  const exits = [...running.values()].filter((c) => c.exitCode === null && c.signalCode === null).map((c) => new Promise((resolve) => {
    c.once('exit', resolve);
    c.kill('SIGKILL');
  }));
  await Promise.all(exits);
  running.clear();
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err: unknown) {
      last = err;
    }
    await sleep(100);
  }
  throw new Error(`${what}: not within ${String(timeoutMs)} ms${last instanceof Error ? ` (last error: ${last.message})` : ''}`);
}

const role = (port: number): Promise<unknown[]> => ask(port, PASSWORD, (r) => r.call('ROLE') as Promise<unknown[]>);
const get = (port: number, key: string): Promise<string | null> => ask(port, PASSWORD, (r) => r.get(key));

/** The primary the Sentinel on `port` names, as a port. */
async function named(port: number): Promise<number | undefined> {
  const answer = await ask(port, PASSWORD, (r) => r.call('SENTINEL', 'get-master-addr-by-name', MASTER) as Promise<[string, string] | null>);
  return answer === null ? undefined : Number(answer[1]);
}

/** `SENTINEL MASTER` as a record. */
async function sentinelView(port: number): Promise<Record<string, string>> {
  const flat = await ask(port, PASSWORD, (r) => r.call('SENTINEL', 'MASTER', MASTER) as Promise<string[]>);
  const view: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) view[flat[i] as string] = flat[i + 1] as string;
  return view;
}

/** Resolves with the primary's port once `port` is a replica with its link up, of the primary every Sentinel names. */
function replicaOfElected(pods: readonly Pod[], port: number): Promise<number> {
  return waitFor(`${String(port)} a replica of the primary the Sentinels name`, 20_000, async () => {
    const names = await Promise.all(pods.map((p) => named(p.sentinel)));
    const primary = names[0];
    if (primary === undefined || names.some((n) => n !== primary) || primary === port) return undefined;
    const [kind, , masterPort, link] = await role(port);
    const [primaryKind] = await role(primary);
    return kind === 'slave' && Number(masterPort) === primary && link === 'connected' && primaryKind === 'master' ? primary : undefined;
  });
}

/** Redis's period of a Sentinel's INFO to the primary and replicas (fixed, but for SENTINEL DEBUG). */
const SENTINEL_INFO_PERIOD_MS = 10_000;

async function infoPeriod(port: number, ms: number): Promise<void> {
  expect(await ask(port, PASSWORD, (r) => r.call('SENTINEL', 'DEBUG', 'info-period', String(ms))), `SENTINEL DEBUG info-period on ${String(port)}`).to.equal('OK');
}

/** Everything in the node's AOF files (a base file and increments, Redis 7). */
function aofText(pod: Pod): string {
  const dir = join(pod.dir, 'appendonlydir');
  return readdirSync(dir).map((name) => readFileSync(join(dir, name), 'latin1')).join('');
}

function aofLoads(pod: Pod): number {
  return (readFileSync(join(pod.dir, 'redis.log'), 'utf8').match(/DB loaded from append only file/g) ?? []).length;
}

describe('deploy/ha Redis: a node restarted by redis-start.sh', function () {
  this.timeout(60_000);
  cleanUpTempDirs();
  let pods: Pod[] = [];

  before(async function startThreePods() {
    const root = makeTempDir('svc-redis-ha-');
    pods = [];
    for (let i = 0; i < 3; i++) {
      const dir = join(root, `pod-${String(i)}`);
      mkdirSync(dir);
      pods.push({ node: await freePort(), sentinel: await freePort(), dir });
    }
    for (const pod of pods) start(pods, pod, 'sentinel');
    await Promise.all(pods.map((p) => waitFor(`sentinel ${String(p.sentinel)} answers`, 10_000, () => named(p.sentinel))));
    await Promise.all(pods.map((p) => infoPeriod(p.sentinel, 1_000)));
    for (const pod of pods) start(pods, pod, 'redis');
    const first = pods[0] as Pod;
    await waitFor('two replicas online on the first node', 15_000, async () => {
      const [kind, , replicas] = await role(first.node);
      return kind === 'master' && Array.isArray(replicas) && replicas.length === 2 ? true : undefined;
    });
    // A Sentinel learns the replicas from the primary's INFO and the other Sentinels from hello
    // messages (every 2 s). Its first INFO, at its link's connect, comes before the replicas have
    // attached, and the next one 10 s later: for that wait only, each asks every second (SENTINEL
    // DEBUG info-period, set once they answer).
    await Promise.all(pods.map((p) => waitFor(`sentinel ${String(p.sentinel)} knows both replicas and the other sentinels`, 20_000, async () => {
      const view = await sentinelView(p.sentinel);
      return view['num-slaves'] === '2' && view['num-other-sentinels'] === '2' ? true : undefined;
    })));
    // The tests run with Redis's own period.
    await Promise.all(pods.map((p) => infoPeriod(p.sentinel, SENTINEL_INFO_PERIOD_MS)));
  });

  after(stopAll);

  it('runs every node with AOF written every second and noeviction', async () => {
    for (const pod of pods) {
      const config = await ask(pod.node, PASSWORD, (r) => r.call('CONFIG', 'GET', 'appendonly', 'appendfsync', 'maxmemory-policy', 'dir') as Promise<string[]>);
      expect(Object.fromEntries(config.flatMap((v, i) => (i % 2 === 0 ? [[v, config[i + 1]]] : []))), String(pod.node)).to.deep.equal({
        appendonly: 'yes',
        appendfsync: 'everysec',
        'maxmemory-policy': 'noeviction',
        dir: pod.dir,
      });
    }
  });

  it('a primary killed and restarted within down-after comes back as a replica of the elected primary, with the lockout on both', async () => {
    const old = pods[0] as Pod;
    expect(await named(old.sentinel)).to.equal(old.node);
    await ask(old.node, PASSWORD, async (r) => {
      await r.set(LOCKOUT, '1700000000000', 'PX', 600_000);
      expect(await r.call('WAIT', '2', '2000'), 'replicas that acknowledged the lockout').to.equal(2);
    });

    await kill9(old, 'redis');
    // The restart comes before the Sentinels see the primary go: they still name it, not down.
    const views = await Promise.all(pods.map((p) => sentinelView(p.sentinel)));
    start(pods, old, 'redis');
    expect(views.map((v) => v['port']), 'the primary the Sentinels name at the restart').to.deep.equal(pods.map(() => String(old.node)));
    expect(views.map((v) => v['flags']), 'the Sentinels have not seen it down').to.satisfy((flags: string[]) => flags.every((f) => !/s_down|o_down/.test(f)));

    const primary = await replicaOfElected(pods, old.node);
    expect(primary).to.not.equal(old.node);
    // The script asks once a second while the Sentinels still name it: the first answer is OK;
    // a failover slower than a second (a busy machine) makes it ask again, and a Sentinel answers
    // that one is in progress (INPROG). Then it starts as a replica of the elected primary.
    const said = readFileSync(join(old.dir, 'redis.out'), 'utf8');
    expect(said, `what the start script said:\n${said}`).to.match(
      new RegExp(
        `asked for a failover to a replica \\(answer: OK\\); waiting for it\n` +
          `(?:redis-start: the Sentinels still name this node, which was down, as the primary: asked for a failover to a replica \\(answer: [^)\n]*\\); waiting for it\n)*` +
          `redis-start: starting as a replica of 127\\.0\\.0\\.1:${String(primary)}, the primary the Sentinels name\n`,
      ),
    );
    expect(await get(primary, LOCKOUT), 'the lockout on the elected primary').to.equal('1700000000000');
    expect(await get(old.node, LOCKOUT), 'the lockout on the restarted node').to.equal('1700000000000');
  });

  it('a replica killed and restarted with its data dir kept comes back as a replica of the primary, from its AOF, with the lockout', async () => {
    const primary = await named((pods[0] as Pod).sentinel);
    const replica = pods.find((p) => p.node !== primary && p !== pods[0]) as Pod;
    await ask(primary as number, PASSWORD, async (r) => {
      await r.set(`${LOCKOUT}-2`, '1700000000001', 'PX', 600_000);
      expect(await r.call('WAIT', '2', '2000')).to.equal(2);
    });
    const loadsBefore = aofLoads(replica);
    // In its AOF before the kill: appendfsync everysec writes it within a second, and a kill -9
    // keeps what was written (the kernel has it), so the condition is the write, not the second.
    await waitFor(`${LOCKOUT}-2 in the AOF of ${String(replica.node)}`, 5_000, async () => (aofText(replica).includes(`${LOCKOUT}-2`) ? true : undefined));

    await kill9(replica, 'redis');
    start(pods, replica, 'redis');
    expect(await replicaOfElected(pods, replica.node)).to.equal(primary);
    expect(aofLoads(replica), 'its AOF read at the restart').to.equal(loadsBefore + 1);
    for (const port of [primary as number, replica.node]) {
      expect(await get(port, LOCKOUT), String(port)).to.equal('1700000000000');
      expect(await get(port, `${LOCKOUT}-2`), String(port)).to.equal('1700000000001');
    }
  });
});

describe('deploy/ha Redis: redis-start.sh with no Sentinel answering', function () {
  this.timeout(20_000);
  cleanUpTempDirs();
  after(stopAll);

  async function alone(usedBefore: boolean): Promise<{ pod: Pod; pods: Pod[] }> {
    const root = makeTempDir('svc-redis-ha-alone-');
    const pods: Pod[] = [];
    for (let i = 0; i < 3; i++) pods.push({ node: await freePort(), sentinel: await freePort(), dir: join(root, `pod-${String(i)}`) });
    for (const p of pods) mkdirSync(p.dir);
    const pod = pods[0] as Pod;
    if (usedBefore) mkdirSync(join(pod.dir, 'appendonlydir'));
    start(pods, pod, 'redis');
    return { pod, pods };
  }

  it('makes the first node the primary on the first start of the set (its data dir empty)', async () => {
    const { pod } = await alone(false);
    const [kind] = await waitFor('the first node answers', 5_000, () => role(pod.node));
    expect(kind).to.equal('master');
  });

  it('never makes a node whose data dir has held data the primary: it waits and says why', async () => {
    const { pod } = await alone(true);
    await sleep(2_500);
    expect(existsSync(join(pod.dir, 'conf', 'redis.conf')), 'a config written').to.equal(false);
    const said = readFileSync(join(pod.dir, 'redis.out'), 'utf8');
    expect(said).to.equal('redis-start: no Sentinel answers; waiting (a node that has held data never makes itself the primary)\n');
    await role(pod.node).then(
      () => expect.fail('a Redis answered'),
      () => undefined,
    );
  });
});
