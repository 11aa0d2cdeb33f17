/** svc_config_problems and svc_config_last_applied_timestamp_seconds on a running server whose files an operator breaks and mends. */
import { expect } from 'chai';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../helpers/accounts-fixture.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

/** The value of one series, by its name and labels as written in the exposition (`{kind="ConfigMap",object="svc-cm"}`). */
function series(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const SVC_CM = '{kind="ConfigMap",object="svc-cm"}';
const SVC_SECRET = '{kind="Secret",object="svc-secret"}';

describe('server metrics: refused configuration files', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let dir: string;
  let server: TestServer;
  const scrape = async () => (await fetch(`${server.url}/metrics`)).text();
  const write = (file: string, text: string) => {
    const tmp = join(dir, `.${file}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, file));
  };

  beforeEach(async () => {
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { 'users.session.duration': '2h' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'metrics-test-key-0123456789abcdef' }),
    });
    server = await startTestServer(dir);
  });
  afterEach(async () => {
    await server.close(500);
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts a file whose YAML does not parse, and its object keeps its last applied time', async () => {
    const before = await scrape();
    expect(series(before, 'svc_config_problems')).to.equal(0);
    const applied = series(before, 'svc_config_last_applied_timestamp_seconds', SVC_CM) ?? 0;
    expect(applied).to.be.closeTo(Date.now() / 1000, 60);
    expect(series(before, 'svc_config_last_applied_timestamp_seconds', SVC_SECRET)).to.be.a('number');

    write('svc-cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: svc-cm\ndata: [\n');
    await waitFor(async () => series(await scrape(), 'svc_config_problems') === 1, 'the refused file counted');
    expect(server.logs()).to.include('config rejected');
    expect(series(await scrape(), 'svc_config_last_applied_timestamp_seconds', SVC_CM), 'a refused file applies nothing').to.equal(applied);

    write('svc-cm.yaml', configMap('svc-cm', { 'users.session.duration': '3h' }));
    await waitFor(async () => series(await scrape(), 'svc_config_problems') === 0, 'the mended file taken');
    expect(series(await scrape(), 'svc_config_last_applied_timestamp_seconds', SVC_CM), 'a good apply moves it').to.be.greaterThan(applied);
  });

  it('counts a file it cannot read', async function () {
    write('svc-cm.yaml', configMap('svc-cm', { 'users.session.duration': '4h' }));
    await waitFor(() => server.services.settings.current().sessionDurationMs === 4 * 3600_000, 'the change applied');
    const applied = series(await scrape(), 'svc_config_last_applied_timestamp_seconds', SVC_CM);
    // A name that cannot be read as a file, whoever runs the test (root reads any mode): a link to a directory.
    mkdirSync(join(dir, 'not-a-file'));
    rmSync(join(dir, 'svc-cm.yaml'));
    symlinkSync(join(dir, 'not-a-file'), join(dir, 'svc-cm.yaml'));
    await waitFor(async () => series(await scrape(), 'svc_config_problems') === 1, 'the unreadable file counted');
    expect(series(await scrape(), 'svc_config_last_applied_timestamp_seconds', SVC_CM)).to.equal(applied);
    expect(server.services.settings.current().sessionDurationMs, 'its last good version stays in force').to.equal(4 * 3600_000);
  });
});
