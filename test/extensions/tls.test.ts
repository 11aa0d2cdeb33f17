import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { closeServer, listen, login, storeFiles } from './helpers.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

/** A test CA, a server certificate for backend.test and a client certificate, made with the openssl CLI. */
function makeCertificates(dir: string): Record<'ca' | 'caKey' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey', string> {
  const run = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=svc test CA');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=DNS:backend.test\nextendedKeyUsage=serverAuth\n');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, subject] of [['server', '/CN=backend.test'], ['client', '/CN=svc-proxy']] as const) {
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`);
  }
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
  return { ca: read('ca.crt'), caKey: read('ca.key'), serverCert: read('server.crt'), serverKey: read('server.key'), clientCert: read('client.crt'), clientKey: read('client.key') };
}

describe('extension proxy (https backends)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let certDir: string;
  let backend: Server;
  let server: TestServer;
  let token: string;
  let hits = 0;

  before(async () => {
    certDir = makeTempDir('svc-certs-');
    const certs = makeCertificates(certDir);
    backend = createServer({ cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      hits++;
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ client: peer.subject?.CN ?? null, url: req.url }));
    });
    const { port } = await listen(backend);
    const url = `https://127.0.0.1:${port}/secure`;
    const tls = { caData: '$svc-backend-tls:ca.crt', serverName: 'backend.test' };
    const extensionConfig = {
      extensions: [
        { name: 'mtls', enabled: true, backend: { services: [{ url, tls: { ...tls, certData: '$svc-backend-tls:tls.crt', keyData: '$svc-backend-tls:tls.key' } }] } },
        { name: 'no-client-cert', enabled: true, backend: { services: [{ url, tls }] } },
        { name: 'untrusted', enabled: true, backend: { services: [{ url, tls: { serverName: 'backend.test', certData: '$svc-backend-tls:tls.crt', keyData: '$svc-backend-tls:tls.key' } }] } },
        { name: 'wrong-name', enabled: true, backend: { services: [{ url, tls: { ...tls, serverName: 'other.test', certData: '$svc-backend-tls:tls.crt', keyData: '$svc-backend-tls:tls.key' } }] } },
      ],
    };
    const dir = tempConfigDir(
      storeFiles({
        extensionConfig,
        policy: '',
        extra: { 'tls.yaml': secret('svc-backend-tls', { 'ca.crt': certs.ca, 'tls.crt': certs.clientCert, 'tls.key': certs.clientKey }) },
      }),
    );
    server = await startTestServer(dir);
    expect(server.services.settings.problems()).to.deep.equal([]);
    token = await login(server, 'admin');
  });

  after(async () => {
    await server.close();
    await closeServer(backend);
    rmSync(certDir, { recursive: true, force: true });
  });

  async function call(name: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${server.url}/api/v1/extensions/${name}/x`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('reaches a backend that demands a client certificate with the configured one', async () => {
    const res = await call('mtls');
    expect(res).to.deep.equal({ status: 200, body: { client: 'svc-proxy', url: '/secure/x' } });
  });

  it('is refused without a client certificate: 502, and the backend handler never runs', async () => {
    const before = hits;
    const res = await call('no-client-cert');
    expect(res.status).to.equal(502);
    expect(res.body['error']).to.be.oneOf(['backend_tls', 'backend_unreachable']);
    expect(hits).to.equal(before);
  });

  it('502 backend_tls with a clear log line for an untrusted certificate or a wrong serverName', async () => {
    for (const name of ['untrusted', 'wrong-name']) {
      const res = await call(name);
      expect(res.status, name).to.equal(502);
      expect(res.body['error'], name).to.equal('backend_tls');
      expect(res.body['message'], name).to.match(new RegExp(`^TLS with the backend of extension '${name}' failed \\(\\w+\\)$`));
    }
    expect(server.logs()).to.include('extension backend TLS failed: check its certificate, tls.caData, tls.serverName and the client certificate');
    expect(server.logs()).to.not.include('BEGIN PRIVATE KEY');
  });
});
