/** A device request from a client not allowed the device grant: `unauthorized_client` (RFC 6749 §5.2). */
import { expect } from 'chai';
import type { StaticClient } from '../../src/idp/static-clients-config.js';
import { basic, startStaticClientsIdp, type StaticClientsIdp } from '../helpers/static-clients-idp.js';

const WIKI: StaticClient = { id: 'wiki', name: 'Wiki', public: false, secret: 'wiki-secret-0123456789', redirectURIs: ['https://wiki.test/cb'], postLogoutRedirectURIs: [] };
const AGENT: StaticClient = { id: 'agent', name: 'oidc-agent', public: true, redirectURIs: ['http://localhost:4242/'], postLogoutRedirectURIs: [] };

describe('idp/unauthorized-client', function () {
  let idp: StaticClientsIdp;

  before(async function () {
    idp = await startStaticClientsIdp([WIKI, AGENT]);
  });
  after(async function () {
    await idp?.close();
  });

  async function deviceAuth(headers: Record<string, string>, form: Record<string, string>) {
    const res = await fetch(`${idp.issuer}/device/auth`, { method: 'POST', headers, body: new URLSearchParams({ scope: 'openid', ...form }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('answers unauthorized_client to a confidential client, with Basic or with its secret in the form', async function () {
    const expected = { error: 'unauthorized_client', error_description: 'urn:ietf:params:oauth:grant-type:device_code is not allowed for this client' };
    const viaBasic = await deviceAuth({ authorization: basic('wiki', 'wiki-secret-0123456789') }, {});
    expect([viaBasic.status, viaBasic.body]).to.deep.equal([400, expected]);
    const viaPost = await deviceAuth({}, { client_id: 'wiki', client_secret: 'wiki-secret-0123456789' });
    expect([viaPost.status, viaPost.body]).to.deep.equal([400, expected]);
  });

  it('leaves the other refusals as they are: a wrong secret is invalid_client, a public client gets its code', async function () {
    const wrong = await deviceAuth({ authorization: basic('wiki', 'guess') }, {});
    expect([wrong.status, wrong.body['error']]).to.deep.equal([401, 'invalid_client']);
    const allowed = await deviceAuth({}, { client_id: 'agent' });
    expect(allowed.status).to.equal(200);
  });
});
