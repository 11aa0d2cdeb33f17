/** An oidc.config written while svc runs: read at start, so svc says in the log that it needs a restart. */
import { expect } from 'chai';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const RESTART = 'oidc.config changed: svc reads it at start; restart svc to apply the change (until then the provider from start stays in force)';

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('main: a change of the SSO provider while svc runs', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  let dir: string;
  let server: TestServer;

  before(async () => {
    dir = tempConfigDir({
      'cm.yaml': configMap('svc-cm', { url: 'https://svc.example.org' }),
      'secret.yaml': secret('svc-secret', { 'server.secretkey': 'change-notice-secret-key-0123456789', 'oidc.secret': 'never-in-the-log' }),
    });
    server = await startTestServer(dir);
  });
  after(async () => {
    await server?.close(1000);
    await rm(dir, { recursive: true, force: true });
  });

  it('logs that oidc.config needs a restart, naming what stays in force, never its secret', async () => {
    expect(server.logs()).to.include('single sign-on: none configured');
    await writeFile(join(dir, 'cm.yaml'), configMap('svc-cm', {
      url: 'https://svc.example.org',
      'oidc.config': 'name: Corp\nissuer: https://sso.example.org\nclientID: svc\nclientSecret: $oidc.secret\n',
    }));
    await until(() => server.logs().includes(RESTART), 'the restart notice');
    const line = server.logs().split('\n').find((l) => l.includes(RESTART)) ?? '';
    expect(JSON.parse(line)).to.include({ level: 40, inForce: 'single sign-on: none configured', configured: 'single sign-on: the external OIDC provider (oidc.config)' });
    expect(server.logs()).not.to.include('never-in-the-log');
    // What is in force did not change: no SSO login is offered.
    expect((await fetch(`${server.url}/auth/login`, { redirect: 'manual' })).status).to.equal(404);
  });

  it('says nothing for a change that leaves the SSO provider alone', async () => {
    const before = server.logs().split(RESTART).length;
    await writeFile(join(dir, 'cm.yaml'), configMap('svc-cm', {
      url: 'https://svc.example.org',
      'oidc.config': 'name: Corp\nissuer: https://sso.example.org\nclientID: svc\nclientSecret: $oidc.secret\n',
      'users.session.duration': '12h',
    }));
    await until(() => server.logs().split('configuration change applied').length > 2, 'the second change');
    expect(server.logs().split(RESTART).length).to.equal(before);
  });
});
