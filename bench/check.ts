/**
 * `npm run bench:check`: the regression gate for a change that touches a login, token or proxy
 * path. Runs the SSO bench (bench/sso-login.ts) and the proxy bench (bench/proxy.sh) briefly,
 * and prints each ratio against its goal and against the figure last published in
 * docs/benchmarks.md for this kind of machine (bench/published.json, ./machine-kind.ts); exits 1
 * when a ratio falls more than 20 % below the published one (./check-verdict.ts). On a kind with
 * nothing published it prints the figures and how to publish them, and exits 0. Not in CI:
 * timings on shared machines are noise, and a ratio of two servers measured in the same minute is
 * the least noisy figure there is.
 *
 * Refresh grants are judged against the refresh floor (oidc-provider with svc's LDAP connector
 * asking the same slapd at each grant); the ratio to oidc-provider alone is printed for the
 * record, and the rates per vCPU beside Keycloak's sizing figures (./sizing-units.ts).
 *
 * The SSO bench runs with --tracing: logins with tracing on (every login sampled) against off, in
 * alternation, beside the proxy bench's svc-traced pairs (issue 55).
 *
 * Each bench runs `--rounds` times (3 by default) and the median ratio of the rounds is judged: on
 * a shared host one 5 s phase's ratio moves by ±40 % from one run to the next.
 *
 * Usage: npm run bench:check [-- --rounds 3 --duration 5 --proxy-duration 5s]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { judgeAll, median, parsePublished } from './check-verdict.js';
import { readMachineKind } from './machine-kind.js';
import { KEYCLOAK_LOGINS_PER_VCPU, KEYCLOAK_REFRESH_GRANTS_PER_VCPU, perVcpuLine } from './sizing-units.js';
import { ROOT } from './sso-login-procs.js';
import type { SsoSummary } from './sso-login.js';

const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    'proxy-duration': { type: 'string', default: '5s' },
    rounds: { type: 'string', default: '3' },
  },
});
const ROUNDS = Math.min(Math.max(Math.trunc(Number(opts.rounds)) || 1, 1), 9);

function run(command: string, args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 << 20, timeout: 15 * 60_000 }, (err, stdout) => {
      if (err === null) resolve(stdout);
      // sso-login.ts exits 1 when a goal is missed; its summary is still written.
      else if (typeof err.code === 'number') resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')}: ${err.message}`));
    });
    child.stderr?.pipe(process.stderr);
  });
}

const published = parsePublished(JSON.parse(await readFile(join(ROOT, 'bench', 'published.json'), 'utf8')));
const machine = await readMachineKind();
const dir = await mkdtemp(join(tmpdir(), 'bench-check-'));
try {
  const rounds: Partial<Record<string, number | undefined>>[] = [];
  /** For the record and Keycloak's units: printed, never judged. */
  const extras: Partial<SsoSummary>[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const summaryFile = join(dir, `sso-${round}.json`);
    console.error(`bench:check round ${round}/${ROUNDS}: SSO bench, ${opts.duration} s per phase`);
    const ssoOut = await run(process.execPath, ['--import', 'tsx', 'bench/sso-login.ts', '--duration', opts.duration, '--tracing', '--json', summaryFile]);
    const sso = JSON.parse(await readFile(summaryFile, 'utf8').catch(() => '{}')) as Partial<SsoSummary>;
    console.error(`bench:check round ${round}/${ROUNDS}: proxy bench, ${opts['proxy-duration']} per target`);
    const proxyOut = await run('bash', ['bench/proxy.sh', opts['proxy-duration'], '64'], { PACED_DELAY_MS: '0' });
    const ratioOf = (pattern: RegExp): number | undefined => {
      const found = pattern.exec(proxyOut)?.[1];
      return found === undefined ? undefined : Number(found);
    };
    console.log(`--- round ${round}\n${ssoOut.trim()}\n${proxyOut.trim()}`);
    rounds.push({
      ssoLogins: sso.loginsRatio, refreshGrants: sso.refreshFloorRatio, proxy: ratioOf(/svc\/node floor ([0-9.]+)/),
      // Each against plain svc, measured in alternation with it (bench/proxy.sh, paired()).
      identityAssertion: ratioOf(/identity assertion on\/off ([0-9.]+)/), rateLimit: ratioOf(/rate limit far above the load: ([0-9.]+) x svc/),
      // Tracing on (every request sampled) / off, in alternation (sso-login.ts --tracing, proxy.sh's svc-traced).
      tracingSso: sso.tracingRatio, tracingProxy: ratioOf(/tracing on\/off ([0-9.]+)/),
    });
    extras.push(sso);
  }

  console.log(`\nbench:check ${new Date().toISOString()}, ${ROUNDS} round(s), median ratio of the rounds, load average ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
  const roundsOf = (name: string) => rounds.map((r) => r[name]);
  const medians = Object.fromEntries(Object.keys(published.ratios).map((name) => [name, median(roundsOf(name))]));
  const { verdicts, notes, failed, machine: publishedHere } = judgeAll(published, machine.label, medians, new Date().toISOString().slice(0, 10));
  const fmt = (values: readonly (number | undefined)[]) => values.map((m) => (m === undefined ? 'n/a' : m.toFixed(2))).join(', ');
  for (const verdict of verdicts) console.log(`${verdict.line}   rounds: ${fmt(roundsOf(verdict.name))}`);
  const extra = (key: keyof SsoSummary) => extras.map((e) => e[key]);
  const providerRatio = median(extra('refreshProviderRatio'));
  console.log(`${'refresh / provider alone'.padEnd(26)} ${providerRatio === undefined ? '   n/a' : providerRatio.toFixed(2).padStart(6)} x   for the record, not judged (the goal was >= 0.75 x)   rounds: ${fmt(extra('refreshProviderRatio'))}`);
  // Keycloak's sizing units: the median rate over the machine's vCPUs, and over svc's own CPU.
  const perVcpu = (what: string, rateKey: keyof SsoSummary, cpuKey: keyof SsoSummary, keycloak: number) => {
    const rate = median(extra(rateKey));
    const cpu = median(extra(cpuKey));
    console.log(rate === undefined ? `${what.padEnd(22)} n/a (a round measured none)` : perVcpuLine(what, rate, machine.vcpus, cpu, keycloak));
  };
  perVcpu('svc SSO logins', 'svcLoginsPerS', 'svcCpuMsPerLogin', KEYCLOAK_LOGINS_PER_VCPU);
  perVcpu('svc refresh grants', 'refreshGrantsPerS', 'svcCpuMsPerGrant', KEYCLOAK_REFRESH_GRANTS_PER_VCPU);
  perVcpu('refresh floor', 'floorGrantsPerS', 'floorCpuMsPerGrant', KEYCLOAK_REFRESH_GRANTS_PER_VCPU);
  for (const note of notes) console.log(note);
  const passed = publishedHere === undefined ? 'bench:check passed: nothing published for this kind of machine, so no regression to judge' : 'bench:check passed';
  console.log(failed.length === 0 ? passed : `bench:check FAILED: ${failed.join(', ')}`);
  process.exitCode = failed.length === 0 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
