/**
 * How a static client authenticates at the token endpoint (./static-clients.ts): a confidential
 * one with its secret in HTTP Basic or in the form (client_secret_post; discovery lists both),
 * a public one with its id only.
 */
import { expect } from 'chai';
import { clientMetadataOf } from '../../src/idp/static-clients.js';
import type { StaticClient } from '../../src/idp/static-clients-config.js';
import { basic, startStaticClientsIdp, type StaticClientsIdp } from '../helpers/static-clients-idp.js';

const WIKI: StaticClient = { id: 'wiki', name: 'Wiki', public: false, secret: 'wiki-secret-0123456789', redirectURIs: ['https://wiki.test/cb'], postLogoutRedirectURIs: [] };

describe('idp/static-clients', function () {
  let idp: StaticClientsIdp;

  before(async function () {
    idp = await startStaticClientsIdp([WIKI]);
  });
  after(async function () {
    await idp?.close();
  });

  async function token(headers: Record<string, string>, form: Record<string, string>) {
    const res = await fetch(`${idp.issuer}/token`, { method: 'POST', headers, body: new URLSearchParams({ grant_type: 'authorization_code', code: 'no-such-code', redirect_uri: 'https://wiki.test/cb', ...form }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('registers a confidential client as client_secret_basic, a public one as none', function () {
    expect(clientMetadataOf(WIKI).token_endpoint_auth_method).to.equal('client_secret_basic');
    expect(clientMetadataOf({ ...WIKI, public: true }).token_endpoint_auth_method).to.equal('none');
  });

  it('authenticates a confidential client by client_secret_basic and by client_secret_post, as discovery says', async function () {
    const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as { token_endpoint_auth_methods_supported: string[] };
    expect(discovery.token_endpoint_auth_methods_supported).to.include.members(['client_secret_basic', 'client_secret_post']);
    // Authenticated, then the code is refused: invalid_grant, not invalid_client.
    expect((await token({ authorization: basic('wiki', 'wiki-secret-0123456789') }, {})).body['error']).to.equal('invalid_grant');
    expect((await token({}, { client_id: 'wiki', client_secret: 'wiki-secret-0123456789' })).body['error']).to.equal('invalid_grant');
    const wrong = await token({}, { client_id: 'wiki', client_secret: 'guess' });
    expect([wrong.status, wrong.body['error']]).to.deep.equal([401, 'invalid_client']);
  });
});
