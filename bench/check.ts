/**
 * `npm run bench:check`: the regression gate for a change that touches a login, token or proxy
 * path. Runs the SSO bench (bench/sso-login.ts) and the proxy bench (bench/proxy.sh) briefly,
 * and prints each ratio against its goal and against the figure last published in
 * docs/benchmarks.md (bench/published.json); exits 1 when a ratio falls more than 20 % below
 * the published one (./check-verdict.ts). Not in CI: timings on shared machines are noise, and
 * a ratio of two servers measured in the same minute is the least noisy figure there is.
 *
 * Usage: npm run bench:check [-- --duration 5 --proxy-duration 5s]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { judge, parsePublished, type Verdict } from './check-verdict.js';
import { ROOT } from './sso-login-procs.js';
import type { SsoSummary } from './sso-login.js';

const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    'proxy-duration': { type: 'string', default: '5s' },
  },
});

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
  const summaryFile = join(dir, 'sso.json');
  console.error(`bench:check: SSO bench, ${opts.duration} s per phase`);
  const ssoOut = await run(process.execPath, ['--import', 'tsx', 'bench/sso-login.ts', '--duration', opts.duration, '--json', summaryFile]);
  const sso = JSON.parse(await readFile(summaryFile, 'utf8').catch(() => '{}')) as Partial<SsoSummary>;
  console.error(`bench:check: proxy bench, ${opts['proxy-duration']} per target`);
  const proxyOut = await run('bash', ['bench/proxy.sh', opts['proxy-duration'], '64'], { PACED_DELAY_MS: '0' });
  const proxyRatio = /svc\/node floor ([0-9.]+)/.exec(proxyOut)?.[1];

  console.log(ssoOut.trim());
  console.log(proxyOut.trim());
  console.log(`\nbench:check ${new Date().toISOString()}, load average ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
  const entries = {
    ssoLogins: sso.loginsRatio,
    refreshGrants: sso.refreshRatio,
    proxy: proxyRatio === undefined ? undefined : Number(proxyRatio),
  } as const;
  const verdicts: Verdict[] = [];
  for (const [name, entry] of Object.entries(published)) {
    const verdict = judge(name, entry, entries[name as keyof typeof entries]);
    verdicts.push(verdict);
    console.log(verdict.line);
  }
  const failed = verdicts.filter((v) => v.regression);
  console.log(failed.length === 0 ? 'bench:check passed' : `bench:check FAILED: ${failed.map((v) => v.name).join(', ')}`);
  process.exitCode = failed.length === 0 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
