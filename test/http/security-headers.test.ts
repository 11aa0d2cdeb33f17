/**
 * Strict-Transport-Security: sent on every answer when svc's `url` is https (the server itself
 * listens on plain http here, as behind a TLS-terminating ingress), never with an http `url`.
 */
import { expect } from 'chai';
import { STRICT_TRANSPORT_SECURITY, transportSecurityFor } from '../../src/http/security-headers.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const PATHS = ['/login', '/api/v1/settings', '/api/v1/session/userinfo', '/api/v1/no-such-route', '/api/v1/extensions/none/x', '/%zz'];

describe('http/security-headers: HSTS', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close(500);
    server = undefined;
  });

  async function start(url: string): Promise<TestServer> {
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', {}),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'hsts-test-secret-key-0123456789abcdef', 'admin.password': '' }),
    });
    return (server = await startTestServer(dir));
  }

  it('is one year, for an https url only', () => {
    expect(STRICT_TRANSPORT_SECURITY).to.equal('max-age=31536000');
    expect(transportSecurityFor('https://svc.example.com')).to.equal('max-age=31536000');
    expect(transportSecurityFor('http://127.0.0.1:8080')).to.equal(undefined);
  });

  it('comes with every answer of a server whose url is https, errors and refusals included', async () => {
    const running = await start('https://svc.example.com');
    for (const path of PATHS) {
      const res = await fetch(`${running.url}${path}`, { redirect: 'manual' });
      await res.arrayBuffer();
      expect(res.headers.get('strict-transport-security'), `${path} (${res.status})`).to.equal('max-age=31536000');
    }
  });

  it('is not sent when the url is http', async () => {
    const running = await start('http://127.0.0.1:1');
    for (const path of PATHS) {
      const res = await fetch(`${running.url}${path}`, { redirect: 'manual' });
      await res.arrayBuffer();
      expect(res.headers.get('strict-transport-security'), path).to.equal(null);
    }
  });
});
