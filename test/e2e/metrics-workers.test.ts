/**
 * /metrics of a server with two workers, scraped on a new connection each time (as behind a
 * Service or a load balancer, where consecutive scrapes land on either worker) while requests
 * run: every counter and histogram series only goes up from one scrape to the next, also when a
 * worker is killed between two scrapes (its counts stay in the sum; issue 52).
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { rmSync } from 'node:fs';
import { accountsConfigDir } from '../helpers/accounts-fixture.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { ROOT, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SCRAPES = 50;

/** One GET on a connection of its own (no keep-alive: the next one may reach the other worker). */
function getFresh(url: string, init: { method?: string; body?: string } = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', agent: false, headers: init.body !== undefined ? { 'content-type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Series that only go up: counters, and histograms' buckets, counts and sums (durations are never negative). */
function monotonicSeries(text: string): Map<string, number> {
  const kinds = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) kinds.set(match[1] as string, match[2] as string);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    const series = line.slice(0, at);
    const name = series.split('{')[0] as string;
    const histogram = /_(bucket|count|sum)$/.test(name) && kinds.get(name.replace(/_(bucket|count|sum)$/, '')) === 'histogram';
    if (kinds.get(name) === 'counter' || histogram) out.set(series, Number(line.slice(at + 1)));
  }
  return out;
}

for (const via of ['the public listener', '--metrics-listen'] as const) {
  describe(`e2e: /metrics with two workers, on ${via}`, function () {
    cleanUpTempDirs();
    this.timeout(120_000);
    let redis: RedisPeer;
    let dir: string;
    let server: ChildProcess | undefined;
    let base: string;
    let metricsUrl: string;
    let logs = '';

    before(async function () {
      redis = await startRedis();
      dir = accountsConfigDir();
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      const metricsPort = via === '--metrics-listen' ? await freePort() : port;
      metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      const args = ['--workers', '2', '--redis', redis.url, '--config', dir, '--listen', `127.0.0.1:${port}`, ...(via === '--metrics-listen' ? ['--metrics-listen', `127.0.0.1:${metricsPort}`] : [])];
      server = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), ...args], { cwd: ROOT, env: { ...process.env, SVC_REDIS_URL: '', SVC_METRICS_LISTEN: '' } });
      server.stdout?.on('data', (d: Buffer) => (logs += d.toString()));
      server.stderr?.on('data', (d: Buffer) => (logs += d.toString()));
      for (const deadline = Date.now() + 60_000; (logs.match(/"worker ready"/g) ?? []).length < 2; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > deadline || server.exitCode !== null) throw new Error(`the two workers did not start:\n${logs}`);
      }
    });
    after(async () => {
      if (server !== undefined && server.exitCode === null) {
        const exited = new Promise((resolve) => server?.once('exit', resolve));
        server.kill('SIGTERM');
        await exited;
      }
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it(`gives ${SCRAPES} consecutive scrapes under load in which no counter series goes down or disappears`, async () => {
      let loading = true;
      // Requests of several kinds, each on a connection of its own so both workers count them.
      const load = async (i: number) => {
        while (loading) {
          if (i % 2 === 0) await getFresh(`${base}/api/version`);
          else await getFresh(`${base}/api/v1/session`, { method: 'POST', body: JSON.stringify({ username: `nobody${i}`, password: 'wrong' }) });
        }
      };
      const loaders = [0, 1, 2, 3].map(load);
      try {
        let previous: Map<string, number> | undefined;
        const drops: string[] = [];
        for (let scrape = 1; scrape <= SCRAPES; scrape++) {
          // The last scrape waits for the load to end: a failed login takes 0.5-1 s, and on a quiet
          // host the other scrapes may all be done before the first one is counted.
          if (scrape === SCRAPES) {
            loading = false;
            await Promise.all(loaders);
          }
          const reply = await getFresh(metricsUrl);
          expect(reply.status, reply.text).to.equal(200);
          const now = monotonicSeries(reply.text);
          expect(now.size, 'counters in the scrape').to.be.greaterThan(5);
          for (const [series, value] of previous ?? []) {
            const after = now.get(series);
            if (after === undefined || after < value) drops.push(`scrape ${scrape}: ${series} ${value} -> ${after ?? 'gone'}`);
          }
          previous = now;
        }
        expect(drops.slice(0, 10), `${drops.length} drops`).to.deep.equal([]);
        const logins = [...(previous ?? [])].find(([series]) => series.startsWith('svc_http_requests_total{') && series.includes('/api/v1/session'));
        expect(logins?.[1] ?? 0, 'the logins of the load are counted').to.be.greaterThan(0);
      } finally {
        loading = false;
        await Promise.all(loaders);
      }
    });

    it('keeps the counts of a worker killed between two scrapes: no counter series goes down or disappears', async () => {
      for (let i = 0; i < 40; i++) expect((await getFresh(`${base}/api/version`)).status).to.equal(200);
      const before = monotonicSeries((await getFresh(metricsUrl)).text);
      const version = [...before.keys()].find((series) => series.startsWith('svc_http_requests_total{') && series.includes('/api/version'));
      expect(before.get(version ?? ''), 'the requests counted before the kill').to.be.at.least(40);

      const readyLines = () => logs.split('\n').filter((line) => line.includes('"msg":"worker ready"'));
      const pids = readyLines().map((line) => (JSON.parse(line) as { pid: number }).pid);
      const victim = pids[pids.length - 1] as number;
      const readyBefore = readyLines().length;
      process.kill(victim, 'SIGKILL');
      for (const deadline = Date.now() + 30_000; readyLines().length === readyBefore; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > deadline) throw new Error(`no worker replaced the killed one:\n${logs.slice(-3_000)}`);
      }
      expect(logs).to.include('"msg":"worker died; starting another"');

      // Scrapes on fresh connections reach the surviving worker and the new one in turn.
      const drops: string[] = [];
      for (let scrape = 1; scrape <= 6; scrape++) {
        const now = monotonicSeries((await getFresh(metricsUrl)).text);
        for (const [series, value] of before) {
          const after = now.get(series);
          if (after === undefined || after < value) drops.push(`scrape ${scrape} after the kill: ${series} ${value} -> ${after ?? 'gone'}`);
        }
      }
      expect(drops.slice(0, 10), `${drops.length} drops`).to.deep.equal([]);
    });
  });
}
