/**
 * GET /api/idp/saml/<id>/metadata on the identity provider's app alone: the SP metadata of a
 * SAML connector, built for the configured url's ACS whatever Host a client sends; 404 for an
 * unknown id and for a connector of another type, even one that could describe itself.
 */
import { expect } from 'chai';
import { createServer, request, type Server } from 'node:http';
import { pino } from 'pino';
import type { BrowserConnector } from '../../connectors/connector.js';
import { createAccountStore } from '../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createIdpApp } from '../../src/idp/app.js';
import { testPasswordGuard } from '../helpers/password-guard.js';
import type { ConnectorSource } from '../../src/idp/connectors/connector-source.js';
import { generateSigningKey } from '../../src/idp/keys.js';
import { createMemoryState } from '../../src/state/memory.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { freePort } from '../helpers/peers.js';
import { requestTarget, type RequestTarget } from '../../src/http/request-target.js';

const log = pino({ level: 'silent' });

/** A browser connector whose metadata echoes the ACS it was asked for. */
function describing(): BrowserConnector {
  return {
    kind: 'browser',
    begin: () => Promise.reject(new Error('not used')),
    complete: () => Promise.reject(new Error('not used')),
    metadata: (callbackUrl) => Promise.resolve(`<EntityDescriptor acs="${callbackUrl}"/>`),
  };
}

describe('idp: SAML service-provider metadata route', function () {
  let server: Server;
  let port: number;
  const url = 'https://svc.example.com';
  const connectors: ConnectorSource = {
    list: () => [{ id: 'corp', name: 'Corp', type: 'saml' }, { id: 'dir', name: 'Directory', type: 'ldap' }, { id: 'gh', name: 'GitHub', type: 'github' }],
    get: (id) => ({ corp: describing(), dir: fakePasswordConnector({}), gh: describing() } as const)[id as 'corp'],
  };

  before(async function () {
    port = await freePort();
    const keys = { signing: [await generateSigningKey(new Date())], cookie: ['cookie-key-for-metadata-tests'] };
    const state = createMemoryState({ log });
    const app = createIdpApp({ url, keys, serverSecretKey: 'metadata-test-secret-key-0123456789', state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), connectors, passwordGuard: testPasswordGuard(state), log });
    server = createServer((req, res) => void app.handle(req, res, requestTarget(req) as RequestTarget));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  });

  after(async function () {
    await new Promise((resolve) => server.close(resolve));
  });

  /** GET with a Host header of the client's choosing. */
  function get(path: string, host = 'evil.example'): Promise<{ status: number; type: string; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, headers: { host, 'x-forwarded-host': host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it("serves a SAML connector's metadata for the configured url's ACS", async () => {
    const res = await get('/api/idp/saml/corp/metadata');
    expect(res.status).to.equal(200);
    expect(res.type).to.match(/^application\/samlmetadata\+xml/);
    expect(res.body).to.equal('<EntityDescriptor acs="https://svc.example.com/api/idp/callback"/>');
  });

  it('answers 404 for an unknown id and for connectors of other types', async () => {
    for (const id of ['nope', 'dir', 'gh']) expect((await get(`/api/idp/saml/${id}/metadata`)).status, id).to.equal(404);
  });
});
