/**
 * `npm run bench:check`: the regression gate for a change that touches a login, token or proxy
 * path. Runs the SSO bench (bench/sso-login.ts) and the proxy bench (bench/proxy.sh) briefly,
 * and prints each ratio against its goal and against the figure last published in
 * docs/benchmarks.md (bench/published.json); exits 1 when a ratio falls more than 20 % below
 * the published one (./check-verdict.ts). Not in CI: timings on shared machines are noise, and
 * a ratio of two servers measured in the same minute is the least noisy figure there is.
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
import { judge, median, parsePublished, type Verdict } from './check-verdict.js';
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
const dir = await mkdtemp(join(tmpdir(), 'bench-check-'));
try {
  const rounds: Partial<Record<'ssoLogins' | 'refreshGrants' | 'proxy' | 'identityAssertion' | 'rateLimit' | 'tracingSso' | 'tracingProxy', number | undefined>>[] = [];
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
      ssoLogins: sso.loginsRatio, refreshGrants: sso.refreshRatio, proxy: ratioOf(/svc\/node floor ([0-9.]+)/),
      // Each against plain svc, measured in alternation with it (bench/proxy.sh, paired()).
      identityAssertion: ratioOf(/identity assertion on\/off ([0-9.]+)/), rateLimit: ratioOf(/rate limit far above the load: ([0-9.]+) x svc/),
      // Tracing on (every request sampled) / off, in alternation (sso-login.ts --tracing, proxy.sh's svc-traced).
      tracingSso: sso.tracingRatio, tracingProxy: ratioOf(/tracing on\/off ([0-9.]+)/),
    });
  }

  console.log(`\nbench:check ${new Date().toISOString()}, ${ROUNDS} round(s), median ratio of the rounds, load average ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
  const verdicts: Verdict[] = [];
  for (const [name, entry] of Object.entries(published)) {
    const measured = rounds.map((r) => r[name as keyof (typeof rounds)[number]]);
    const verdict = judge(name, entry, median(measured));
    verdicts.push(verdict);
    console.log(`${verdict.line}   rounds: ${measured.map((m) => (m === undefined ? 'n/a' : m.toFixed(2))).join(', ')}`);
  }
  const failed = verdicts.filter((v) => v.regression);
  console.log(failed.length === 0 ? 'bench:check passed' : `bench:check FAILED: ${failed.map((v) => v.name).join(', ')}`);
  process.exitCode = failed.length === 0 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
