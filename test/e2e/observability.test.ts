/**
 * What an operator watches: /readyz (configuration loaded; the state backend reported, never failing it) apart from
 * /healthz, the configuration gauges and build info in /metrics, /metrics on its own listener
 * with --metrics-listen (and then not on the public one), and `svc-server --version`.
 */
import { expect } from 'chai';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { ROOT, runEntry, SERVER_ENTRY } from '../helpers/run.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function metricValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || (!name.includes('{') && l.startsWith(`${name}{`)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('e2e: readiness, metrics and version', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let dir: string;
  const servers: TestServer[] = [];
  let redis: RedisPeer | undefined;

  before(() => {
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {}),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'observability-test-key-0123456789' }),
    });
  });

  after(async () => {
    for (const s of servers) await s.close(500);
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('/readyz is 200 while Redis answers, and still 200 naming it degraded when it does not; /healthz stays 200', async () => {
    redis = await startRedis();
    const server = await startTestServer(dir, { redisUrl: redis.url });
    servers.push(server);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).to.equal(200);
    expect(await ready.json()).to.deep.equal({ status: 'ready', checks: { configuration: 'ok', store: 'ok', state: 'ok' } });
    await redis.stop();
    redis = undefined;
    const down = await fetch(`${server.url}/readyz`);
    expect(down.status, 'a Redis outage is a degraded mode, not a reason to leave the Service').to.equal(200);
    const body = (await down.json()) as { status: string; checks: { state: string; configuration: string } };
    expect(body.status).to.equal('ready');
    expect(body.checks.configuration).to.equal('ok');
    expect(body.checks.state).to.match(/^degraded: the redis state backend (is not connected|does not answer|did not answer within 500 ms)/);
    expect((await fetch(`${server.url}/healthz`)).status).to.equal(200);
  });

  it('counts standing configuration problems, stamps the last applied change, and names the build', async () => {
    const server = await startTestServer(dir);
    servers.push(server);
    const before = await (await fetch(`${server.url}/metrics`)).text();
    expect(metricValue(before, 'svc_config_problems')).to.equal(0);
    const applied = metricValue(before, 'svc_config_last_applied_timestamp_seconds{kind="ConfigMap",object="svc-cm"}') ?? 0;
    expect(applied).to.be.closeTo(Date.now() / 1000, 60);
    expect(before).to.contain(`svc_build_info{version="${VERSION}",node="${process.version}"} 1`);
    expect(before).to.match(/^nodejs_version_info\{/m);

    const changed = new Promise<void>((resolve) => server.services.settings.onChange(() => resolve()));
    const tmp = join(dir, '.svc-cm.tmp');
    writeFileSync(tmp, configMap('svc-cm', { 'no.such.key': 'x', 'accounts.Bad Name': 'login' }));
    renameSync(tmp, join(dir, 'svc-cm.yaml'));
    await changed;
    const after = await (await fetch(`${server.url}/metrics`)).text();
    expect(metricValue(after, 'svc_config_problems')).to.equal(2);
    expect(metricValue(after, 'svc_config_last_applied_timestamp_seconds{kind="ConfigMap",object="svc-cm"}'), 'its good keys apply').to.be.greaterThan(applied);
    writeFileSync(tmp, configMap('svc-cm', {}));
    renameSync(tmp, join(dir, 'svc-cm.yaml'));
  });

  it('serves /metrics only on --metrics-listen when it is set', async () => {
    const port = await freePort();
    const server = await startTestServer(dir, { metricsListen: { host: '127.0.0.1', port } });
    servers.push(server);
    expect(server.metricsUrl).to.equal(`http://127.0.0.1:${port}`);
    const own = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(own.status).to.equal(200);
    expect(await own.text()).to.contain('svc_http_requests_total');
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 'nothing else there').to.equal(404);
    expect((await fetch(`${server.url}/metrics`)).status, 'not on the public listener').to.equal(404);
    expect((await fetch(`${server.url}/api/version`)).status).to.equal(200);
  });

  it('svc-server --version names svc and the runtime', async () => {
    const { code, stdout } = await runEntry(SERVER_ENTRY, ['--version']);
    expect(code).to.equal(0);
    expect(stdout).to.equal(`svc-server ${VERSION} (Node.js ${process.version})\n`);
  });
});
