/**
 * The bundled provider's own endpoints under fuzzing (docs/reliability.md): the token endpoint's
 * parameters, client authentication and body shapes; the device authorization endpoint; the
 * device page and its form, with and without the cookie its page set. Property: every answer
 * below 500, an HTML page or a JSON error, and no heap growth past a bound over the run.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { webClientSecret } from '../../src/idp/clients.js';
import { SECRET_KEY } from '../helpers/accounts-fixture.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { fuzzOptions, leaf } from '../helpers/fuzz.js';
import { expectHandled, fuzzedServer, rawParameters } from '../helpers/http-fuzz.js';
import { startPasswordIdpSvc } from '../helpers/idp-svc.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const GRANTS = ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'client_credentials', 'password', 'implicit', 'urn:ietf:params:oauth:grant-type:token-exchange', ''];
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('identity provider endpoints under fuzzing', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  const fuzzed = fuzzedServer(() => startPasswordIdpSvc(fakePasswordConnector({}), { secretKey: SECRET_KEY }));
  const call = fuzzed.call;

  const tokenRequest = fc.record({
    grant: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...GRANTS) }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) }),
    auth: fc.constantFrom('none', 'web', 'web-wrong', 'cli', 'random', 'garbled', 'body-web', 'body-cli'),
    params: rawParameters(['code', 'redirect_uri', 'code_verifier', 'refresh_token', 'device_code', 'scope', 'resource', 'client_id', 'client_secret', 'grant_type', 'audience', 'client_assertion', 'client_assertion_type']),
    contentType: fc.constantFrom('application/x-www-form-urlencoded', 'application/x-www-form-urlencoded', 'application/json', 'text/plain', ''),
    random: fc.option(leaf, { nil: undefined }),
  });

  it('answers the token endpoint below 500 with a JSON error, whatever the grant, parameters and client authentication (300 cases, seed 3809)', async () => {
    const secret = webClientSecret(SECRET_KEY);
    await fc.assert(
      fc.asyncProperty(tokenRequest, async (input) => {
        const headers: Record<string, string> = {};
        const body = [`grant_type=${encodeURIComponent(input.grant)}`];
        if (input.auth === 'web') headers['authorization'] = basic('svc', secret);
        if (input.auth === 'web-wrong') headers['authorization'] = basic('svc', 'wrong');
        if (input.auth === 'cli') headers['authorization'] = basic('svc-cli', '');
        if (input.auth === 'random') headers['authorization'] = basic(String(input.random), String(input.random));
        if (input.auth === 'garbled') headers['authorization'] = `Basic ${String(input.random)}%%`;
        if (input.auth === 'body-web') body.push('client_id=svc', `client_secret=${encodeURIComponent(secret)}`);
        if (input.auth === 'body-cli') body.push('client_id=svc-cli');
        if (input.params !== '') body.push(input.params);
        if (input.contentType !== '') headers['content-type'] = input.contentType;
        const text = input.contentType === 'application/json' && input.random !== undefined ? JSON.stringify(input.random) ?? '' : body.join('&');
        const answer = await expectHandled(await call('/api/idp/token', { method: 'POST', headers, body: text }), `token ${input.auth} ${text.slice(0, 120)}`);
        expect(answer, 'the web client\'s secret repeated').to.not.contain(secret);
      }),
      fuzzOptions(3809, 300),
    );
  });

  const deviceRequest = fc.record({
    endpoint: fc.constantFrom('device/auth', 'device-page', 'device-form', 'device-form'),
    params: rawParameters(['client_id', 'scope', 'user_code', 'xsrf', 'confirm', 'abort', 'resource', 'acr_values']),
    withCookie: fc.boolean(),
    withXsrf: fc.boolean(),
  });

  it('answers the device authorization endpoint, the device page and its form below 500, with or without the page\'s cookie (200 cases, seed 3810)', async () => {
    const page = await call('/api/idp/device');
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const cookie = (page.headers.getSetCookie().find((c) => c.startsWith('svc.device=')) ?? '').split(';')[0] ?? '';
    expect(xsrf).to.not.equal('');
    await fc.assert(
      fc.asyncProperty(deviceRequest, async (input) => {
        const headers: Record<string, string> = input.withCookie ? { cookie } : {};
        if (input.endpoint === 'device-page') {
          await expectHandled(await call(`/api/idp/device?${input.params}`, { headers }), `device page ${input.params.slice(0, 120)}`);
          return;
        }
        const body = [...(input.withXsrf && input.endpoint === 'device-form' ? [`xsrf=${encodeURIComponent(xsrf)}`] : []), ...(input.params === '' ? [] : [input.params])].join('&');
        const path = input.endpoint === 'device/auth' ? '/api/idp/device/auth' : '/api/idp/device';
        await expectHandled(await call(path, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body }), `${path} ${body.slice(0, 120)}`);
      }),
      fuzzOptions(3810, 200),
    );
  });

  it('kept its heap bounded over the run, and reached refusals and successes', () => {
    fuzzed.expectBoundedRun([200, 400, 401]);
  });
});
