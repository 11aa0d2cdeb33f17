/**
 * The rights examples svc ships work as written: the rule in the comment of the svc-rbac-cm that
 * the first start writes, and examples/extension-two-clusters (extension, rule, Application and
 * cluster Secret), each against a running server and real backends.
 */
import { expect } from 'chai';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RBAC_CM_TEXT } from '../../src/config/bootstrap.js';
import { echoBackend, login, storeFiles, type Backend, type Echo } from '../extensions/helpers.js';
import { tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/extension-two-clusters/', import.meta.url));

/** The commented rule lines of the generated svc-rbac-cm, uncommented as an operator would. */
function generatedExampleRules(): string {
  return RBAC_CM_TEXT.split('\n').filter((l) => /^\s*#\s+[pg], /.test(l)).map((l) => l.replace(/^\s*#\s+/, '')).join('\n');
}

describe('e2e: the shipped rights examples', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const backends: Backend[] = [];
  const servers: TestServer[] = [];

  after(async () => {
    for (const s of servers) await s.close(500);
    for (const b of backends) await b.close();
  });

  it("the generated svc-rbac-cm's example lets alice call the extension without naming an application", async function () {
    const backend = await echoBackend('metrics');
    backends.push(backend);
    const rules = generatedExampleRules();
    expect(rules).to.contain('g, alice, role:metrics-viewer');
    const dir = tempConfigDir(storeFiles({
      extensionConfig: { extensions: [{ name: 'metrics', enabled: true, backend: { services: [{ url: backend.url }] } }] },
      policy: rules, accounts: ['alice', 'bob'],
    }));
    const server = await startTestServer(dir);
    servers.push(server);
    const call = async (user: string) => (await fetch(`${server.url}/api/v1/extensions/metrics/q`, { headers: { authorization: `Bearer ${await login(server, user)}` } })).status;
    expect(await call('alice')).to.equal(200);
    expect(await call('bob'), 'a user the example does not name').to.equal(403);
  });

  it('examples/extension-two-clusters routes a call naming its Application to the prod backend, and refuses one naming none', async function () {
    const inCluster = await echoBackend('in-cluster');
    const prod = await echoBackend('prod');
    backends.push(inCluster, prod);
    // The example's files beside a svc-secret as the first start leaves it (admin's password known here).
    const adminSecret = storeFiles({ extensionConfig: { extensions: [] }, policy: '' })['svc-secret.yaml'] ?? '';
    const dir = tempConfigDir({ 'svc-secret.yaml': adminSecret });
    for (const file of readdirSync(EXAMPLE).filter((f) => f.endsWith('.yaml'))) copyFileSync(join(EXAMPLE, file), join(dir, file));
    const cm = join(dir, 'svc-cm.yaml');
    writeFileSync(cm, readFileSync(cm, 'utf8').replace('http://127.0.0.1:9090', inCluster.url).replace('http://127.0.0.1:9091', prod.url));
    const server = await startTestServer(dir);
    servers.push(server);
    // alice has apiKey only: the admin generates her token (svc account generate-token --account alice).
    const made = await fetch(`${server.url}/api/v1/account/alice/token`, {
      method: 'POST', headers: { authorization: `Bearer ${await login(server, 'admin')}`, 'content-type': 'application/json' }, body: '{}',
    });
    expect(made.status).to.equal(200);
    const { token } = (await made.json()) as { token: string };
    const named = await fetch(`${server.url}/api/v1/extensions/metrics/api/v1/query`, { headers: { authorization: `Bearer ${token}`, 'svc-application-name': 'svc/guestbook' } });
    expect(named.status).to.equal(200);
    expect(((await named.json()) as Echo).backend).to.equal('prod');
    const unnamed = await fetch(`${server.url}/api/v1/extensions/metrics/api/v1/query`, { headers: { authorization: `Bearer ${token}` } });
    expect(unnamed.status).to.equal(403);
    expect(((await unnamed.json()) as { message: string }).message).to.contain('no rights rule allows extensions, *, */metrics');
  });
});
