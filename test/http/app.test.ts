import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'server-key-that-must-never-leak-0123456789';
const CLIENT_SECRET = 'oidc-client-secret-that-must-never-leak';

describe('HTTP skeleton', () => {
  cleanUpTempDirs();
  let server: TestServer;
  let dir: string;

  before(async () => {
    dir = tempConfigDir({
      'cm.yaml': configMap('svc-cm', {
        url: 'https://svc.example.com',
        'accounts.alice': 'apiKey, login',
        'oidc.config': 'name: Corp\nissuer: https://idp.example.com\nclientID: svc\nclientSecret: $oidc.clientSecret\ncliClientID: svc-cli\n',
        'idp.config': 'connectors:\n  - type: github\n    id: gh\n    name: GitHub\n    config: { clientID: a, clientSecret: $oidc.clientSecret }\n',
      }),
      'rbac.yaml': configMap('svc-rbac-cm', { 'policy.default': 'role:readonly' }),
      'secret.yaml': secret('svc-secret', {
        'server.secretkey': SECRET_KEY,
        'admin.password': '$2b$10$abcdefghijklmnopqrstuuJ9F7dJ1VQ9WcC8Pq4mC2P0oQmVvX1pS',
        'oidc.clientSecret': CLIENT_SECRET,
      }),
    });
    server = await startTestServer(dir);
  });

  after(async () => {
    await server.close();
  });

  it('answers /healthz and echoes a sane request id', async () => {
    const res = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'trace-1' } });
    expect(res.status).to.equal(200);
    expect(await res.text()).to.equal('ok');
    expect(res.headers.get('x-request-id')).to.equal('trace-1');
    const generated = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(generated.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('serves Prometheus metrics labelled by route pattern', async () => {
    await fetch(`${server.url}/api/v1/settings`);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).to.match(/svc_http_requests_total\{route="\/api\/v1\/settings",method="GET",status="200"\} \d+/);
    expect(text).to.include('process_cpu_seconds_total');
  });

  it('counts a failed request with the status the client got', async () => {
    expect((await fetch(`${server.url}/api/v1/account`)).status).to.equal(401);
    expect((await fetch(`${server.url}/api/v1/metrics-404-check`)).status).to.equal(404);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).to.match(/svc_http_requests_total\{route="\/api\/v1\/account",method="GET",status="401"\} 1\n/);
    expect(text).to.match(/svc_http_requests_total\{route="unmatched",method="GET",status="404"\} \d+\n/);
    expect(text).not.to.match(/route="\/api\/v1\/account",method="GET",status="404"/);
  });

  it('shows public settings and never a secret', async () => {
    const res = await fetch(`${server.url}/api/v1/settings`);
    const text = await res.text();
    expect(JSON.parse(text)).to.deep.equal({
      url: 'https://svc.example.com',
      oidcConfig: { name: 'Corp', issuer: 'https://idp.example.com', clientID: 'svc', cliClientID: 'svc-cli', scopes: ['openid', 'profile', 'email', 'groups'] },
      // oidc.config and idp.config are both set: only the external provider is in force.
      idpConnectors: [],
      userLoginsDisabled: false,
    });
    for (const leak of [SECRET_KEY, CLIENT_SECRET, '$2b$10$', 'clientSecret', 'password']) expect(text).to.not.include(leak);
  });

  it('answers an unknown route with the JSON error body', async () => {
    const res = await fetch(`${server.url}/api/v1/nothing-here`);
    expect(res.status).to.equal(404);
    expect(await res.json()).to.deep.equal({ error: 'not_found', message: 'no route for GET /api/v1/nothing-here' });
  });

  it('logs JSON lines carrying the request id, and no secret', async () => {
    await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'trace-logs' } });
    const lines = server.logs().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l['requestId'] === 'trace-logs' && l['path'] === '/healthz')).to.equal(true);
    for (const leak of [SECRET_KEY, CLIENT_SECRET]) expect(server.logs()).to.not.include(leak);
  });

  it('applies a settings change from the directory without restart', async () => {
    const path = join(dir, 'cm.yaml');
    const doc = YAML.parse(readFileSync(path, 'utf8')) as { data: Record<string, string> };
    doc.data['url'] = 'https://renamed.example.com';
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path, YAML.stringify(doc));
    const deadline = Date.now() + 2500;
    let url = '';
    while (Date.now() < deadline) {
      url = ((await (await fetch(`${server.url}/api/v1/settings`)).json()) as { url: string }).url;
      if (url === 'https://renamed.example.com') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(url).to.equal('https://renamed.example.com');
  });
});
