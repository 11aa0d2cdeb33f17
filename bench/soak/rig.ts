/**
 * What the soak runs against, as an operator would run it: `svc-server` processes (one worker
 * each) on Redis Sentinel (primary, replica, three sentinels), sharing a config dir, with the
 * bundled identity provider in front of a real slapd, an extension backend, and a balancer at the
 * `url` they all serve. Two of them take the process faults; a third is never touched by one, so
 * that one life lasts the whole run and its RSS slope can be judged (a leak shows there). The
 * config dir lives on a small tmpfs where this machine can mount one, so the "disk full" fault
 * fills a real file system; elsewhere a file-size limit stands in for it.
 */
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import bcrypt from 'bcryptjs';
import YAML from 'yaml';
import { ldapConnectorConfig } from '../../test/connectors/ldap/fixture.js';
import { configMap, secret } from '../../test/helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../../test/helpers/peers.js';
import { startRedisSentinel, type RedisSentinelPeer } from '../../test/helpers/redis-topology.js';
import { startBalancer, type Balancer } from './balancer.js';
import { startSoakBackend, type SoakBackend } from './backend.js';
import { createMemoryLimit, type MemoryLimit } from './memory-limit.js';
import { ENTRY } from '../../scripts/ensure-built.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LDIF = join(ROOT, 'fixtures', 'ldap', 'ldap-connector.ldif');
export const SECRET_KEY = 'soak-secret-key-0123456789abcdef';
/**
 * alice makes the load's logins; bob only checks the rights edits, and carol only holds the
 * WebSocket: each account keeps at most 50 sessions (the oldest end past it), so the long-lived
 * session and the edits' logins stay clear of alice's churn.
 */
export const PASSWORDS = { admin: 'soak-admin-pass-1', alice: 'soak-alice-pass-1', bob: 'soak-bob-pass-12', carol: 'soak-carol-pass-1' } as const;
/** A directory user (fixtures/ldap/ldap-connector.ldif) who logs in through the bundled provider. */
export const SSO_USER = { username: 'erin', password: 'erin123' } as const;
/** The tmpfs size: the config files are a few kB; the API tokens written over an hour stay well under. */
const TMPFS_SIZE = '8m';

/** Whole lines kept per error message. */
const ERROR_SAMPLES = 3;

/** One `svc-server` process on a fixed port, restartable on it (the balancer knows the port). */
export class SvcProcess {
  child: ChildProcessWithoutNullStreams | undefined;
  /** Errors it logged (level error and worse), by message, over every life of the process. */
  readonly errors = new Map<string, number>();
  /** The first lines of each error message, whole (time, error, stack), so that a failure can be told apart from another. */
  readonly errorSamples = new Map<string, { readonly at: number; readonly line: string }[]>();
  tail = '';

  /**
   * `inspectPort`: the process listens for the inspector there (127.0.0.1 only), so that its live
   * heap can be read; `memoryLimit`: it runs in a cgroup of its own with that limit.
   */
  constructor(readonly name: string, readonly port: number, private readonly configDir: string, private readonly env: NodeJS.ProcessEnv, readonly inspectPort?: number, readonly memoryLimit?: MemoryLimit) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  async start(): Promise<void> {
    const inspect = this.inspectPort === undefined ? [] : [`--inspect=127.0.0.1:${this.inspectPort}`];
    // The compiled server, as `npm start` runs it (not the sources through tsx, whose loader and source maps would be measured with it).
    const argv = [process.execPath, ...inspect, ENTRY, '--config', this.configDir, '--listen', `127.0.0.1:${this.port}`, '--workers', '1'];
    const [command, ...args] = this.memoryLimit?.wrap(argv) ?? argv;
    const child = spawn(command!, args, { cwd: ROOT, env: this.env });
    this.child = child;
    let partial = '';
    const keep = (d: Buffer): void => {
      const text = d.toString();
      this.tail = (this.tail + text).slice(-8_000);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as { level?: number; msg?: string; time?: number | string };
          if ((entry.level ?? 0) < 50) continue;
          const msg = entry.msg ?? '';
          this.errors.set(msg, (this.errors.get(msg) ?? 0) + 1);
          const samples = this.errorSamples.get(msg) ?? [];
          if (samples.length < ERROR_SAMPLES) samples.push({ at: typeof entry.time === 'number' ? entry.time : typeof entry.time === 'string' ? Date.parse(entry.time) : Date.now(), line: line.slice(0, 2_000) });
          this.errorSamples.set(msg, samples);
        } catch {
          // not a log line
        }
      }
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`${this.name} exited (${String(child.exitCode)}) while starting: ${this.tail}`);
      const ok = await fetch(`${this.url}/readyz`).then((r) => r.status === 200, () => false);
      if (ok) return;
      await sleep(200);
    }
    throw new Error(`${this.name} was not ready within 60 s: ${this.tail}`);
  }

  kill9(): Promise<void> {
    return this.signal('SIGKILL');
  }

  /** SIGTERM, as a rolling restart sends; resolves when the process has exited. */
  terminate(): Promise<void> {
    return this.signal('SIGTERM');
  }

  private signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }
}

export interface Rig {
  readonly url: string;
  readonly configDir: string;
  /** The two processes the faults kill and restart. */
  readonly svc: readonly [SvcProcess, SvcProcess];
  /** Every process, as the balancer, the invariants and the samplers see them: `svc`, then one no fault touches (it lives the whole run). */
  readonly all: readonly SvcProcess[];
  readonly redis: RedisSentinelPeer;
  readonly backend: SoakBackend;
  readonly balancer: Balancer;
  /** Whether the config dir is on a tmpfs of its own (else: a file-size limit stands in for a full disk). */
  readonly tmpfs: boolean;
  slapdPort: number;
  slapd: Peer;
  restartSlapd(): Promise<void>;
  stop(): Promise<void>;
}

function tryMountTmpfs(dir: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE},mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function writeConfig(dir: string, url: string, slapdPort: number, backendUrl: string): void {
  const hash = (p: string) => bcrypt.hashSync(p, 4);
  const extensions = [{ name: 'soak', enabled: true, backend: { services: [{ url: backendUrl }] } }];
  writeFileSync(join(dir, 'svc-cm.yaml'), configMap('svc-cm', {
    url,
    'users.session.duration': '2h',
    'accounts.alice': 'apiKey, login',
    'accounts.bob': 'login',
    'accounts.carol': 'login',
    'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(slapdPort) }] }),
    'extension.config': YAML.stringify({ extensions }),
  }));
  writeFileSync(join(dir, 'svc-rbac-cm.yaml'), configMap('svc-rbac-cm', {
    'policy.csv': ['p, alice, extensions, *, */soak, allow', 'p, carol, extensions, *, */soak, allow', 'p, erin, extensions, *, */soak, allow', 'p, admin, accounts, *, *, allow'].join('\n'),
  }));
  writeFileSync(join(dir, 'svc-secret.yaml'), secret('svc-secret', {
    'server.secretkey': SECRET_KEY,
    'admin.password': hash(PASSWORDS.admin),
    'admin.passwordMtime': '2020-01-01T00:00:00.000Z',
    'accounts.alice.password': hash(PASSWORDS.alice),
    'accounts.alice.passwordMtime': '2020-01-01T00:00:00.000Z',
    'accounts.bob.password': hash(PASSWORDS.bob),
    'accounts.carol.password': hash(PASSWORDS.carol),
    'ldap.bindPW': 'readerpw',
  }));
}

export interface RigOptions {
  /** A memory limit in MiB for svc-c, as a container's (bench/soak/memory-limit.ts). */
  readonly svcCMemoryMb?: number | undefined;
}

export async function startRig(options: RigOptions = {}): Promise<Rig> {
  // dist/ rebuilt first when a source is newer, as `npm start` does.
  execFileSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: ROOT, stdio: 'inherit' });
  const configDir = mkdtempSync(join(tmpdir(), 'svc-soak-config-'));
  const tmpfs = tryMountTmpfs(configDir);
  const redis = await startRedisSentinel();
  const slapdPort = await freePort();
  const startSlapd = () => startPeer('start-slapd.sh', [String(slapdPort), '0'], { USERS_LDIF: LDIF });
  const slapd = await startSlapd();
  const backend = await startSoakBackend();
  const [lbPort, portA, portB, portC, inspectC] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const url = `http://127.0.0.1:${lbPort}`;
  writeConfig(configDir, url, slapdPort, backend.url);
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_LOG_LEVEL: 'warn' };
  for (const name of Object.keys(env)) if (name.startsWith('SVC_REDIS')) delete env[name];
  env['SVC_REDIS_SENTINELS'] = redis.sentinels.map((s) => `${s.host}:${s.port}`).join(',');
  env['SVC_REDIS_SENTINEL_MASTER'] = redis.masterName;
  const svc: [SvcProcess, SvcProcess] = [new SvcProcess('svc-a', portA, configDir, env), new SvcProcess('svc-b', portB, configDir, env)];
  const all = [...svc, new SvcProcess('svc-c', portC, configDir, env, inspectC, options.svcCMemoryMb === undefined ? undefined : createMemoryLimit('svc-c', options.svcCMemoryMb))];
  // The first start writes the stores' missing parts: one process after the other.
  for (const each of all) await each.start();
  const balancer: Balancer = await startBalancer(lbPort, () => all.map((s) => s.url));
  const rig: Rig = {
    url,
    configDir,
    svc,
    all,
    redis,
    backend,
    balancer,
    tmpfs,
    slapdPort,
    slapd,
    async restartSlapd() {
      rig.slapd = await startSlapd();
    },
    async stop() {
      await Promise.all(all.map((s) => s.terminate()));
      for (const s of all) s.memoryLimit?.remove();
      await balancer.close();
      await backend.close();
      await rig.slapd.stop();
      await redis.stop();
      if (tmpfs) execFileSync('umount', [configDir]);
      rmSync(configDir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** svc-secret as it is on disk now (for the invariant that every created token is there). */
export function secretText(rig: Rig): string {
  return readFileSync(join(rig.configDir, 'svc-secret.yaml'), 'utf8');
}
