/** `svc-server` as a process: first start, validate, rbac can. */
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { ROOT, runEntry, entryArgs, SERVER_ENTRY, type RunResult } from '../helpers/run.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

/**
 * The time a hook gets to run a describe's processes together (up to twelve, which one after
 * another had a test's 20 s each): on a loaded machine they share its two cores.
 */
const TOGETHER_TIMEOUT = 60_000;

describe('svc-server', () => {
  cleanUpTempDirs();
  describe('first start', () => {
    it('creates the stores in a missing config dir, serves /healthz and never logs the password', async () => {
      const dir = join(makeTempDir('svc-first-'), 'config');
      const port = await freePort();
      const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--config', dir, '--listen', `127.0.0.1:${port}`], { cwd: ROOT, env: { ...process.env, SVC_REDIS_URL: '' } });
      let logs = '';
      child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
      try {
        const deadline = Date.now() + 15_000;
        let status = 0;
        while (Date.now() < deadline && status !== 200) {
          status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0);
          if (status !== 200) await new Promise((r) => setTimeout(r, 50));
        }
        expect(status).to.equal(200);
        for (const file of ['svc-cm.yaml', 'svc-rbac-cm.yaml', 'svc-secret.yaml', 'svc-initial-admin-secret.yaml']) expect(existsSync(join(dir, file)), file).to.equal(true);
        const initial = readFileSync(join(dir, 'svc-initial-admin-secret.yaml'), 'utf8');
        const encoded = /password: (\S+)/.exec(initial)?.[1] ?? '';
        const password = Buffer.from(encoded, 'base64').toString('utf8');
        expect(password.length).to.be.greaterThanOrEqual(16);
        expect(logs).to.include('svc-initial-admin-secret');
        expect(logs).to.not.include(password);
        // As argocd admin initial-password: the password alone on stdout.
        const shown = await runEntry(SERVER_ENTRY, ['admin', 'initial-password', '--config', dir]);
        expect(shown.code, shown.stderr).to.equal(0);
        expect(shown.stdout).to.equal(`${password}\n`);
        expect(shown.stderr).to.include("change it with 'svc account update-password'");
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('close', r));
      }
    });
  });

  describe('admin initial-password and --help', () => {
    // Two processes that share nothing: run together in the hook (a process still running after
    // a test is killed by the suite's root hook), each test judges its own.
    let dir: string;
    let missing: RunResult;
    let help: RunResult;
    before(async () => {
      dir = tempConfigDir({ 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }) });
      // The command's audit event goes to the file, not to the stderr asserted here (audit-offline.test.ts).
      const auditLog = join(makeTempDir('svc-audit-'), 'audit.log');
      [missing, help] = await Promise.all([
        runEntry(SERVER_ENTRY, ['admin', 'initial-password', '--config', dir], { ...process.env, SVC_AUDIT_LOG: auditLog }),
        runEntry(SERVER_ENTRY, ['--help']),
      ]);
    });

    it('says where the Secret was looked for when there is none', () => {
      const { code, stdout, stderr } = missing;
      expect([code, stdout]).to.deep.equal([1, '']);
      expect(stderr).to.equal(`Secret svc-initial-admin-secret not found in ${dir}: it is written by the first start only, and may have been deleted once the password was changed\n`);
    });

    it('--help prints the README\'s synopsis word for word', () => {
      const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
      const synopsis = /## Running it\n[\s\S]*?```\n([\s\S]*?)\n```/.exec(readme)?.[1];
      expect(synopsis).to.be.a('string');
      const { code, stdout } = help;
      expect(code).to.equal(0);
      expect(stdout).to.include(`Synopsis (as in the README):\n${synopsis as string}\n`);
      for (const command of ['validate', 'rbac', 'admin', 'account', 'login', 'idp']) expect(stdout).to.match(new RegExp(`^  ${command} `, 'm'));
    });
  });

  describe('validate', () => {
    // Six processes, each reading its own config dir (or none): run together in the hook, each
    // test judges its own.
    let problems: RunResult;
    let connectors: RunResult;
    let clean: RunResult;
    let missing: RunResult;
    let file: string;
    let onFile: [RunResult, RunResult];
    before(async function () {
      this.timeout(TOGETHER_TIMEOUT);
      const problemsDir = tempConfigDir({
        'cm.yaml': configMap('svc-cm', {
          'no.such.key': 'x',
          'accounts.a-username-longer-than-thirty-two-chars': 'login',
          'extension.config': 'extensions:\n  - name: ok\n    enabled: true\n    backend:\n      services:\n        - url: http://127.0.0.1:9000\n  - name: bad\n    enabled: true\n    backend:\n      services:\n        - url: "http//missing-colon"\n',
          'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $missing:key\n',
        }),
        'rbac.yaml': configMap('svc-rbac-cm', { 'policy.csv': 'p, role:dev, extensions, *, */*, allow\np, role:dev, extensions\n' }),
        'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }),
      });
      const connectorsDir = tempConfigDir({
        'cm.yaml': configMap('svc-cm', {
          'idp.config': [
            'connectors:',
            '  - { type: saml, id: corp, name: Corp, config: { ssoURL: "idp.example.com/sso", usernameAttr: name, emailAttr: email, insecureSkipSignatureValidation: true } }',
            '  - { type: github, id: github, name: GitHub, config: { clientID: a, clientSecret: $github.secret, redirectURI: "https://svc.example.com/api/dex/callback" } }',
            '  - { type: ldap, id: ldap, name: LDAP, config: { host: "ldap.example.com", userSearch: { baseDN: "ou=people", username: uid, idAttr: uid, usernameAttr: uid } } }',
            '',
          ].join('\n'),
        }),
        'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k', 'github.secret': 's' }),
      });
      const cleanDir = tempConfigDir({
        'cm.yaml': configMap('svc-cm', { url: 'https://svc.example.com', 'accounts.alice': 'apiKey' }),
        'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }),
      });
      file = join(tempConfigDir({ 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }) }), 'secret.yaml');
      let onValidate: RunResult;
      let onRbacCan: RunResult;
      [problems, connectors, clean, missing, onValidate, onRbacCan] = await Promise.all([
        runEntry(SERVER_ENTRY, ['validate', '--config', problemsDir]),
        runEntry(SERVER_ENTRY, ['validate', '--config', connectorsDir]),
        runEntry(SERVER_ENTRY, ['validate', '--config', cleanDir]),
        runEntry(SERVER_ENTRY, ['validate', '--config', '/nonexistent/svc']),
        runEntry(SERVER_ENTRY, ['validate', '--config', file]),
        runEntry(SERVER_ENTRY, ['rbac', 'can', '--config', file, 'admin', 'accounts', 'get', 'x']),
      ]);
      onFile = [onValidate, onRbacCan];
    });

    it('reports every problem of a config dir in one run, each with its key path, and exits 1', () => {
      const { code, stderr } = problems;
      expect(code).to.equal(1);
      const lines = stderr.trim().split('\n');
      expect(lines).to.include('svc-cm: no.such.key: unknown key');
      expect(lines).to.include("svc-cm: accounts.a-username-longer-than-thirty-two-chars: username 'a-username-longer-than-thirty-two-chars' is longer than 32 characters");
      expect(lines).to.include("svc-cm: extension.config: extensions[1].backend.services[0].url: 'http//missing-colon' is not a URL (want http:// or https:// with a host, without query or fragment)");
      expect(lines).to.include("svc-cm: oidc.config: clientSecret: references Secret 'missing', which does not exist");
      expect(lines.some((l) => l.startsWith('svc-rbac-cm: policy.csv: line 2'))).to.equal(true, stderr);
      expect(lines.at(-1)).to.equal('5 problems found');
    });

    it('names connector problems of idp.config with their key paths, all in one run, opening nothing', () => {
      const { code, stderr } = connectors;
      expect(code).to.equal(1);
      expect(stderr.trim().split('\n')).to.deep.equal([
        "svc-cm: idp.config: connectors[0].config.ssoURL: 'idp.example.com/sso' is not an http(s) URL",
        'svc-cm: idp.config: connectors[1].config.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream',
        'svc-cm: idp.config: connectors[2].config.userSearch.usernameAttr: unknown key',
        '3 problems found',
      ]);
    });

    it('exits 0 on a clean config dir', () => {
      const { code, stdout, stderr } = clean;
      expect(stderr).to.equal('');
      expect(code).to.equal(0);
      expect(stdout).to.include('configuration is valid');
    });

    it('exits 1 on a missing directory, and on a file given as one', () => {
      const { code, stderr } = missing;
      expect(code).to.equal(1);
      expect(stderr).to.equal('/nonexistent/svc: no such directory\n');
      for (const [command, result] of [['validate', onFile[0]], ['rbac can', onFile[1]]] as const) {
        expect(result.code, command).to.equal(1);
        expect(result.stderr, command).to.equal(`${file}: not a directory\n`);
      }
    });
  });

  describe('rbac can', () => {
    // Made in a hook, not while the file is read: the temp dir bookkeeping removes what a describe's run made.
    let dir: string;
    /**
     * The answers, by case: twelve processes that only read a config dir, run together in the
     * hook (a process still running after a test is killed by the suite's root hook); each test
     * judges its own.
     */
    const answers = new Map<string, RunResult>();
    before(async function () {
      this.timeout(TOGETHER_TIMEOUT);
      dir = tempConfigDir({
        'rbac.yaml': configMap('svc-rbac-cm', {
          'policy.csv': 'p, role:team-a, extensions, *, team-a/*, allow\ng, alice, role:team-a\ng, devs, role:team-a\np, mallory, extensions, *, team-a/metrics, deny\ng, mallory, role:team-a\np, reader, extensions, get, team-a/*, allow\n',
        }),
        'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }),
      });
      const broken = tempConfigDir({
        'rbac.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: svc-rbac-cm }\ndata:\n  policy.csv: "p, alice, accounts, update, *\n  policy.default: [unclosed\n',
        'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }),
      });
      const runs: [string, string[]][] = [
        ...cases.map(([subject, resource, action, object]): [string, string[]] => [`${subject} ${resource} ${action} ${object}`, ['--config', dir, subject, resource, action, object]]),
        ['GET', ['--config', dir, 'reader', 'extensions', 'GET', 'team-a/metrics']],
        ['broken', ['--config', broken, 'alice', 'accounts', 'update', 'x']],
      ];
      const results = await Promise.all(runs.map(([, args]) => runEntry(SERVER_ENTRY, ['rbac', 'can', ...args])));
      for (const [i, [name]] of runs.entries()) answers.set(name, results[i] as RunResult);
    });
    const answer = (name: string): RunResult => {
      const result = answers.get(name);
      if (result === undefined) throw new Error(`no run for ${name}`);
      return result;
    };
    const cases: [string, string, string, string, number][] = [
      ['alice', 'extensions', '*', 'team-a/metrics', 0],
      ['devs', 'extensions', '*', 'team-a/logs', 0],
      ['alice', 'extensions', '*', 'team-b/metrics', 2],
      ['mallory', 'extensions', '*', 'team-a/metrics', 2],
      ['mallory', 'extensions', '*', 'team-a/logs', 0],
      ['reader', 'extensions', 'get', 'team-a/metrics', 0],
      ['reader', 'extensions', 'head', 'team-a/metrics', 0],
      ['reader', 'extensions', 'post', 'team-a/metrics', 2],
      ['mallory', 'extensions', 'post', 'team-a/metrics', 2],
      ['alice', 'extensions', 'delete', 'team-a/metrics', 0],
    ];
    for (const [subject, resource, action, object, expected] of cases) {
      it(`${subject} ${resource} ${action} ${object} -> exit ${expected}`, () => {
        const { code, stdout } = answer(`${subject} ${resource} ${action} ${object}`);
        expect(code).to.equal(expected);
        expect(stdout).to.equal(expected === 0 ? 'yes\n' : 'no\n');
      });
    }

    it('refuses an unknown method for extensions, naming it (exit 1)', () => {
      const { code, stdout, stderr } = answer('GET');
      expect(code).to.equal(1);
      expect(stdout).to.equal('');
      expect(stderr).to.equal("rbac can: unknown method \"GET\" for extensions (want * or one of get, post, put, patch, delete, head, options); methods are written in lower case: 'get'\n");
    });

    it('gives no answer (exit 1) when the policy may be in a file that does not parse', () => {
      const { code, stdout, stderr } = answer('broken');
      expect(code).to.equal(1);
      expect(stdout).to.equal('');
      expect(stderr).to.match(/no answer: svc-rbac-cm may be in what could not be read \(.*rbac\.yaml\); fix it first\n$/);
    });
  });

  describe('environment', () => {
    // Eight processes that stop at their options, or only read the config dir (validate): run
    // together in the hook (a process still running after a test is killed by the suite's root
    // hook); each test judges its own.
    const noRedis = { ...process.env, SVC_REDIS_URL: '' };
    const workers: [readonly string[], NodeJS.ProcessEnv][] = [
      [['--workers', '2'], noRedis],
      [['--workers', '2', '--redis', ''], noRedis],
    ];
    const redisUrls: [string, string][] = [
      ['http://:s3cr3tpw@127.0.0.1:16399', 'the scheme is http:, not redis: or rediss:'],
      ['notaurl-s3cr3tpw', 'not a URL'],
      ['redis://:s3cr3tpw@127.0.0.1:16399/x', 'the path must be a database number (/0 to /99) or nothing'],
    ];
    const badWorkers = { ...noRedis, SVC_WORKERS: 'four' };
    let onWorkers: RunResult[];
    let onLogLevel: RunResult;
    let onRedisUrls: RunResult[];
    let servedBadWorkers: RunResult;
    let validatedBadWorkers: RunResult;
    before(async function () {
      this.timeout(TOGETHER_TIMEOUT);
      const dir = tempConfigDir({ 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k', 'admin.password': 'x' }) });
      const serve = (args: readonly string[], env: NodeJS.ProcessEnv) => runEntry(SERVER_ENTRY, ['--config', dir, '--listen', '127.0.0.1:1', ...args], env);
      const [logLevel, served, validated, ...rest] = await Promise.all([
        serve([], { ...noRedis, SVC_LOG_LEVEL: 'verbose' }),
        serve([], badWorkers),
        runEntry(SERVER_ENTRY, ['validate', '--config', dir], badWorkers),
        ...workers.map(([args, env]) => serve(args, env)),
        ...redisUrls.map(([url]) => serve(['--redis', url], noRedis)),
      ]);
      [onLogLevel, servedBadWorkers, validatedBadWorkers] = [logLevel as RunResult, served as RunResult, validated as RunResult];
      onWorkers = rest.slice(0, workers.length);
      onRedisUrls = rest.slice(workers.length);
    });

    it('takes an empty SVC_REDIS_URL or --redis as none: one worker, and more need Redis', () => {
      for (const [i, [args]] of workers.entries()) {
        const served = onWorkers[i] as RunResult;
        expect(served.code, args.join(' ')).to.equal(1);
        expect(served.stderr, args.join(' ')).to.equal('svc-server: --workers above 1 needs --redis, --redis-sentinel or --redis-cluster: login throttling and token revocation must be shared by every worker\n');
      }
    });

    it('names SVC_LOG_LEVEL when its value is not a level', () => {
      expect(onLogLevel.code).to.equal(1);
      expect(onLogLevel.stderr).to.equal("svc-server: SVC_LOG_LEVEL: 'verbose' is not one of fatal, error, warn, info, debug, trace, silent\n");
    });

    it('refuses a Redis URL it cannot use, in one line that never repeats it', () => {
      for (const [i, [url, problem]] of redisUrls.entries()) {
        const served = onRedisUrls[i] as RunResult;
        expect(served.code, url).to.equal(1);
        expect(served.stderr, url).to.equal(`svc-server: --redis (or SVC_REDIS_URL): ${problem}; use redis://[user:password@]host[:port][/db], or rediss:// for TLS\n`);
      }
    });

    it('rejects a bad SVC_WORKERS in one line when serving, and validate does not read it', () => {
      expect(servedBadWorkers.code).to.equal(1);
      expect(servedBadWorkers.stderr).to.equal("svc-server: SVC_WORKERS: 'four' is not a number of workers from 1 to 256\n");
      expect(validatedBadWorkers.stderr).to.equal('');
      expect(validatedBadWorkers.code).to.equal(0);
    });
  });

  describe('cluster', () => {
    let redis: RedisPeer;
    let taken: Server;
    before(async () => {
      redis = await startRedis();
      taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      await new Promise((resolve) => taken.close(resolve));
      await redis.stop();
    });

    it('exits 1 with one line naming the reason when the workers cannot listen, without restarting them', async function () {
      this.timeout(20_000);
      const address = taken.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const dir = tempConfigDir({ 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k', 'admin.password': 'x' }) });
      const { code, stdout, stderr } = await runEntry(SERVER_ENTRY, ['--workers', '2', '--redis', redis.url, '--config', dir, '--listen', `127.0.0.1:${port}`]);
      expect(code).to.equal(1);
      expect(stderr).to.equal(`svc-server: a worker could not start: bind EADDRINUSE 127.0.0.1:${port}\n`);
      // No restart: the primary's log has the failed start and no 'starting another' (a timed bound said this before, and failed on a loaded machine).
      expect(stdout).to.contain('a worker could not start; stopping');
      expect(stdout).to.not.contain('worker died; starting another');
    });

    it('restarts a worker that dies after it was ready, each worker slot on its own budget: one slot dying 5 times does not use up the restart of another', async function () {
      this.timeout(150_000);
      const dir = tempConfigDir({ 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k', 'admin.password': 'x' }) });
      const port = await freePort();
      const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--workers', '2', '--redis', redis.url, '--config', dir, '--listen', `127.0.0.1:${port}`], { cwd: ROOT });
      let logs = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      // Counted from the primary's log: a worker killed before the primary knows it is ready
      // would count as one that could not start.
      const ready = () => logs.split('\n').filter((line) => line.includes('"worker ready"')).length;
      const until = async (what: string, check: () => boolean) => {
        for (const deadline = Date.now() + 30_000; !check(); await new Promise((r) => setTimeout(r, 50))) {
          if (Date.now() > deadline) throw new Error(`not within 30 s: ${what}\n${stderr}\n${logs.slice(-3000)}`);
        }
      };
      // Each slot's current pid: a replacement is the one pid not seen before.
      const seen = new Set<number>();
      const slotPids: number[] = [];
      const newPid = () => {
        const fresh = workerPids(child.pid ?? 0).filter((pid) => !seen.has(pid));
        expect(fresh, 'one new worker process').to.have.length(1);
        seen.add(fresh[0] ?? 0);
        return fresh[0] ?? 0;
      };
      const kill = async (slot: number) => {
        const before = ready();
        process.kill(slotPids[slot] ?? 0, 'SIGKILL');
        await until(`slot ${slot} restarted`, () => ready() === before + 1);
        slotPids[slot] = newPid();
      };
      try {
        await until('2 workers ready', () => ready() === 2);
        for (const pid of workerPids(child.pid ?? 0)) {
          seen.add(pid);
          slotPids.push(pid);
        }
        // Slot 0 crash-loops: 5 deaths within the minute, each restarted.
        for (let death = 1; death <= 5; death++) await kill(0);
        // Slot 1 dies once: the 6th death in the server but the first of its slot, so it is restarted.
        await kill(1);
        expect(child.exitCode, 'still serving').to.equal(null);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).to.equal(200);
        const restarted = logs.split('\n').filter((line) => line.includes('"worker died; starting another"')).map((line) => (JSON.parse(line) as { slot: number }).slot);
        expect(restarted).to.deep.equal([0, 0, 0, 0, 0, 1]);
        // The 6th death of a slot within the minute stopping the server: test/commands/restart-budget.test.ts
        // (a worker start takes seconds here, so six of them may not fit in one minute of a loaded machine).
        expect(stderr).to.equal('');
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).to.equal(0);
    });
  });

  describe('a Redis that refuses the password', () => {
    const PASSWORD = 'node-s3cret';
    let redis: RedisPeer;
    before(async () => {
      redis = await startRedis();
      const raw = new Redis(redis.url);
      await raw.config('SET', 'requirepass', PASSWORD);
      raw.disconnect();
    });
    after(async () => {
      await redis.stop();
    });

    // Before, svc logged WRONGPASS, then `svc listening`, and served on a state it could never use.
    it('stops the start with one line naming the cause, never the password, for a wrong or a missing password', async function () {
      this.timeout(30_000);
      const dir = tempConfigDir({ 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k', 'admin.password': 'x' }) });
      // One worker (the server itself), and several (each worker opens the state; the primary says which failed).
      const cases = [[':wrong-pw@', '1', ''], ['', '2', 'a worker could not start: ']] as const;
      // Two starts that share nothing but the Redis that refuses them: run together.
      const ports = [await freePort(), await freePort()];
      const refused = await Promise.all(cases.map(([userinfo, workers], i) => runEntry(SERVER_ENTRY, ['--config', dir, '--listen', `127.0.0.1:${ports[i] ?? 0}`, '--workers', workers, '--redis', `redis://${userinfo}127.0.0.1:${redis.port}`], { ...process.env, SVC_REDIS_URL: '' })));
      for (const [i, [userinfo, , prefix]] of cases.entries()) {
        const url = `redis://${userinfo}127.0.0.1:${redis.port}`;
        const served = refused[i] as RunResult;
        expect(served.code, `${url}\n${served.stderr}`).to.equal(1);
        expect(served.stderr, url).to.equal(`svc-server: ${prefix}state: standalone redis at 127.0.0.1:${redis.port} cannot be used: Redis refused the user or password of the --redis URL (SVC_REDIS_URL)\n`);
        expect(served.stdout, url).not.to.contain('svc listening');
        expect(served.stdout + served.stderr, url).not.to.match(/wrong-pw|s3cret/);
      }
    });
  });
});

/** The pids of the cluster workers of a primary (its child processes). */
function workerPids(primary: number): number[] {
  const out = execFileSync('pgrep', ['-P', String(primary)], { encoding: 'utf8' });
  return out.trim().split('\n').filter(Boolean).map(Number);
}
