/**
 * `svc-server` with --redis-sentinel and --redis-cluster, as a process: the start-up log names
 * the topology in force, and a topology it cannot use (no such master, wrong password, cluster
 * down, bad flags) stops the start with one line on stderr that names the cause and no secret.
 * Real Sentinel peers (scripts/peers/start-redis-sentinel.sh).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { accountsConfigDir } from '../helpers/accounts-fixture.js';
import { freePort } from '../helpers/peers.js';
import { startRedisSentinel, type RedisSentinelPeer } from '../helpers/redis-topology.js';
import { ROOT, runEntry, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const PASSWORD = 'node-s3cret';
const SENTINEL_PASSWORD = 'sentinel-s3cret';

/** The environment without any Redis setting of the machine running the tests. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('SVC_REDIS')) delete env[name];
  return { ...env, ...extra };
}

describe('svc-server on Redis Sentinel and Cluster', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let peer: RedisSentinelPeer;
  let sentinels: string;
  let dir: string;

  const refusals: [string, () => Record<string, string>, RegExp][] = [
    ['a master name no sentinel knows', () => ({ SVC_REDIS_SENTINELS: sentinels, SVC_REDIS_SENTINEL_MASTER: 'nosuch', SVC_REDIS_PASSWORD: PASSWORD, SVC_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD }), /no sentinel knows a master named 'nosuch'/],
    ['a wrong Redis password', () => ({ SVC_REDIS_SENTINELS: sentinels, SVC_REDIS_SENTINEL_MASTER: 'svc', SVC_REDIS_PASSWORD: 'wrong-pw', SVC_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD }), /refused the password/],
    ['a wrong Sentinel password', () => ({ SVC_REDIS_SENTINELS: sentinels, SVC_REDIS_SENTINEL_MASTER: 'svc', SVC_REDIS_PASSWORD: PASSWORD, SVC_REDIS_SENTINEL_PASSWORD: 'wrong-spw' }), /refused the Sentinel password/],
  ];
  /**
   * The refused starts: each waits out the start's wait for its topology (seconds) before it
   * gives up, and they share nothing but the config dir they read, so they run together, within
   * the first refusal's test; each test judges its own.
   */
  const served = new Map<string, ReturnType<typeof runEntry>>();
  let clusterNodes: string;
  async function refusedStart(what: string): ReturnType<typeof runEntry> {
    if (served.size === 0) {
      const start = (args: string[], env: NodeJS.ProcessEnv) => {
        const run = runEntry(SERVER_ENTRY, ['--config', dir, '--listen', '127.0.0.1:1', '--workers', '1', ...args], env);
        run.catch(() => undefined); // judged by its test, which awaits it
        return run;
      };
      for (const [name, env] of refusals) served.set(name, start([], cleanEnv(env())));
      served.set('cluster', start(['--redis-cluster', clusterNodes], cleanEnv({})));
      // All ended within the first test: the suite's root hook kills a process still running after a test.
      await Promise.allSettled(served.values());
    }
    return served.get(what)!;
  }

  before(async function () {
    dir = join(makeTempDir('svc-topology-'), 'config');
    peer = await startRedisSentinel({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    sentinels = peer.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
    clusterNodes = `127.0.0.1:${await freePort()},127.0.0.1:${await freePort()}`;
  });

  after(async function () {
    await Promise.allSettled(served.values());
    await peer?.stop();
  });

  it('logs the topology, the master name and the primary it found', async function () {
    const port = await freePort();
    const env = cleanEnv({ SVC_REDIS_SENTINELS: sentinels, SVC_REDIS_SENTINEL_MASTER: peer.masterName, SVC_REDIS_PASSWORD: PASSWORD, SVC_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD });
    const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--config', dir, '--listen', `127.0.0.1:${port}`, '--workers', '1'], { cwd: ROOT, env });
    let logs = '';
    child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
    child.stderr.on('data', (d: Buffer) => (logs += d.toString()));
    try {
      const deadline = Date.now() + 20_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) {
        status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status, logs).to.equal(200);
      expect(logs).to.include(`redis sentinel, master '${peer.masterName}'`);
      expect(logs).to.include(`primary at 127.0.0.1:${await peer.primaryPort()}`);
      expect(logs).not.to.include(PASSWORD);
      expect(logs).not.to.include(SENTINEL_PASSWORD);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('close', r));
    }
  });

  for (const [what, , reason] of refusals) {
    it(`stops the start with one line on ${what}`, async function () {
      const refused = await refusedStart(what);
      expect(refused.code, refused.stderr).to.equal(1);
      const lines = refused.stderr.trim().split('\n');
      expect(lines, refused.stderr).to.have.length(1);
      expect(lines[0]).to.match(/^svc-server: state: redis sentinel, master '.*' \(sentinels .*\) cannot be used: /);
      expect(lines[0], refused.stderr).to.match(reason);
      expect(refused.stderr + refused.stdout).not.to.match(/wrong-s?pw|s3cret/);
    });
  }

  it('validate names the topology in force and what it found, or why it cannot be used', async function () {
    const base = { SVC_REDIS_SENTINELS: sentinels, SVC_REDIS_PASSWORD: PASSWORD, SVC_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD };
    const cfg = accountsConfigDir();
    // Four processes that share nothing but the config dir they read: started together.
    const [ok, memory, unused, wrong] = await Promise.all([
      runEntry(SERVER_ENTRY, ['validate', '--config', cfg], cleanEnv({ ...base, SVC_REDIS_SENTINEL_MASTER: peer.masterName })),
      runEntry(SERVER_ENTRY, ['validate', '--config', cfg], cleanEnv({})),
      // A Sentinel password in the environment without sentinels (a shell that holds it for another svc): said unused, not refused.
      runEntry(SERVER_ENTRY, ['validate', '--config', cfg], cleanEnv({ SVC_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD })),
      runEntry(SERVER_ENTRY, ['validate', '--config', cfg], cleanEnv({ ...base, SVC_REDIS_SENTINEL_MASTER: 'nosuch' })),
    ]);
    expect(ok.code, ok.stderr).to.equal(0);
    expect(ok.stdout).to.include(`state: redis sentinel, master '${peer.masterName}' (sentinels ${sentinels.replaceAll(',', ', ')}): primary at 127.0.0.1:${await peer.primaryPort()} (role master)\n`);
    expect(memory.stdout).to.include('state: in memory (not shared between replicas)');
    expect(unused.code, unused.stderr).to.equal(0);
    expect(unused.stdout).to.include('state: in memory (not shared between replicas)');
    expect(unused.stderr).to.equal('svc-server: warning: SVC_REDIS_SENTINEL_PASSWORD is set but unused (no Redis topology here reads it); validate ignores it, a server started so refuses to start\n');
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr).to.match(/^state: redis sentinel, master 'nosuch' .* cannot be used: no sentinel knows a master named 'nosuch' \(--redis-sentinel-master\)\n$/);
  });

  it('stops the start with one line when no cluster node answers', async function () {
    const nodes = clusterNodes;
    const refused = await refusedStart('cluster');
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.equal(`svc-server: state: redis cluster (seed nodes ${nodes.replace(',', ', ')}) cannot be used: no cluster node answered (${nodes.replace(',', ', ')})\n`);
  });

  it('names the flag and its variable when the options do not make a topology', async function () {
    const cases: [string[], Record<string, string>, string][] = [
      [['--redis-sentinel', '127.0.0.1:26379'], {}, '--redis-sentinel (or SVC_REDIS_SENTINELS) needs --redis-sentinel-master (or SVC_REDIS_SENTINEL_MASTER): the name the sentinels monitor the primary under'],
      [['--redis-cluster', '127.0.0.1'], {}, "--redis-cluster (or SVC_REDIS_CLUSTER): '127.0.0.1' is not HOST:PORT (for example 10.0.0.5:26379); separate several with commas"],
      [['--redis-cluster', '127.0.0.1:7000', '--redis', 'redis://127.0.0.1:6379'], {}, '--redis (or SVC_REDIS_URL) and --redis-cluster (or SVC_REDIS_CLUSTER) exclude each other: give one Redis topology'],
      [['--redis-cluster', '127.0.0.1:7000', '--redis-db', '2'], {}, '--redis-db (or SVC_REDIS_DB): a Redis Cluster has only database 0'],
      [['--redis', 'redis://127.0.0.1:6379'], { SVC_REDIS_PASSWORD: 'x' }, 'SVC_REDIS_PASSWORD: only with --redis-sentinel or --redis-cluster; --redis (or SVC_REDIS_URL) carries its user, password, TLS (rediss://) and database in the URL'],
      [[], { SVC_REDIS_SENTINEL_MASTER: 'svc' }, '--redis-sentinel-master (or SVC_REDIS_SENTINEL_MASTER): only with --redis-sentinel (or SVC_REDIS_SENTINELS)'],
      [[], { SVC_REDIS_SENTINEL_PASSWORD: 'x' }, 'SVC_REDIS_SENTINEL_PASSWORD: only with --redis-sentinel (or SVC_REDIS_SENTINELS)'],
    ];
    // Each process stops at its options, before it reads or writes anything: started together.
    const served = await Promise.all(cases.map(([args, env]) => runEntry(SERVER_ENTRY, ['--config', dir, '--listen', '127.0.0.1:1', ...args], cleanEnv(env))));
    for (const [i, [args, , message]] of cases.entries()) {
      expect(served[i]?.code, args.join(' ')).to.equal(1);
      expect(served[i]?.stderr, args.join(' ')).to.equal(`svc-server: ${message}\n`);
    }
  });
});
