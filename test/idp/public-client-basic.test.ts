/**
 * A public client's Basic header with its own id and an empty password is no authentication
 * (oidc-agent's requests, issue 53); every other Basic header for a public client is refused as
 * before, and a secret in it is counted by the client-secret guard.
 */
import { expect } from 'chai';
import { parseBasic } from '../../src/idp/public-client-basic.js';
import type { StaticClient } from '../../src/idp/static-clients-config.js';
import { basic, startStaticClientsIdp, type StaticClientsIdp } from '../helpers/static-clients-idp.js';

const AGENT: StaticClient = { id: 'agent', name: 'oidc-agent', public: true, redirectURIs: ['http://localhost:4242/'], postLogoutRedirectURIs: [] };
const OTHER: StaticClient = { id: 'other', name: 'Other', public: true, redirectURIs: ['http://localhost:4243/'], postLogoutRedirectURIs: [] };
const WIKI: StaticClient = { id: 'wiki', name: 'Wiki', public: false, secret: 'wiki-secret-0123456789', redirectURIs: ['https://wiki.test/cb'], postLogoutRedirectURIs: [] };

describe('idp/public-client-basic', function () {
  describe('parseBasic', function () {
    it('decodes the id and password as oidc-provider does, and nothing it would refuse', function () {
      expect(parseBasic(basic('agent', ''))).to.deep.equal({ clientId: 'agent', secret: '' });
      expect(parseBasic(`basic ${Buffer.from('a%20b+c:x').toString('base64')}`)).to.deep.equal({ clientId: 'a b c', secret: 'x' });
      for (const bad of [undefined, '', 'Bearer abc', `Basic ${Buffer.from('no-colon').toString('base64')}`, 'Basic a', 'Basic !!!!', `Basic  ${Buffer.from('a:').toString('base64')}`,
        `Basic ${Buffer.from('%zz:').toString('base64')}`]) {
        expect(parseBasic(bad), String(bad)).to.equal(undefined);
      }
    });
  });

  describe('at the provider', function () {
    let idp: StaticClientsIdp;

    before(async function () {
      idp = await startStaticClientsIdp([AGENT, OTHER, WIKI]);
    });
    after(async function () {
      await idp?.close();
    });
    beforeEach(function () {
      idp.throttleCalls.length = 0;
    });

    async function post(path: string, authorization: string | undefined, form: Record<string, string>) {
      const res = await fetch(`${idp.issuer}${path}`, { method: 'POST', headers: authorization === undefined ? {} : { authorization }, body: new URLSearchParams(form) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    }

    it('runs the device flow with the client\'s own id and an empty password, as oidc-agent sends them, the poll naming the client in the header only', async function () {
      const started = await post('/device/auth', basic('agent', ''), { client_id: 'agent', scope: 'openid offline_access' });
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      expect(started.body['device_code']).to.be.a('string');
      const poll = await post('/token', basic('agent', ''), { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: String(started.body['device_code']) });
      // The client authenticated: the code is only not yet approved.
      expect([poll.status, poll.body['error']]).to.deep.equal([400, 'authorization_pending']);
      // Another client cannot poll the code the header's client started.
      const stolen = await post('/token', basic('other', ''), { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: String(started.body['device_code']) });
      expect(stolen.body['error']).to.equal('invalid_grant');
      expect(idp.throttleCalls).to.deep.equal([]);
    });

    it('refuses a non-empty password for a public client, and the client-secret guard counts it', async function () {
      const refused = await post('/token', basic('agent', 'guess'), { grant_type: 'refresh_token', refresh_token: 'x' });
      expect([refused.status, refused.body['error']]).to.deep.equal([401, 'invalid_client']);
      expect(idp.throttleCalls).to.deep.equal(['admit idp-client:agent', 'recordFailure idp-client:agent']);
    });

    it('refuses the header when the form names another client, twice, or brings its own secret', async function () {
      const device = { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'x' };
      const mismatch = await post('/token', basic('agent', ''), { ...device, client_id: 'other' });
      expect([mismatch.status, mismatch.body['error'], mismatch.body['error_description']]).to.deep.equal([400, 'invalid_request', 'client_id mismatch']);
      const body = new URLSearchParams(device);
      body.append('client_id', 'agent');
      body.append('client_id', 'agent');
      const twice = await fetch(`${idp.issuer}/token`, { method: 'POST', headers: { authorization: basic('agent', '') }, body });
      expect(twice.status).to.equal(400);
      const withSecret = await post('/token', basic('agent', ''), { ...device, client_secret: 'guess' });
      expect([withSecret.status, withSecret.body['error']]).to.deep.equal([400, 'invalid_request']);
    });

    it('leaves an empty password for a confidential client, or an unknown id, to oidc-provider\'s refusal', async function () {
      for (const id of ['wiki', 'nobody']) {
        const refused = await post('/token', basic(id, ''), { grant_type: 'refresh_token', refresh_token: 'x' });
        expect([refused.status, refused.body['error'], refused.body['error_description']], id)
          .to.deep.equal([400, 'invalid_request', 'client_secret must be provided in the Authorization header']);
      }
      expect(idp.throttleCalls).to.deep.equal([]);
    });
  });
});
