/**
 * The bundled provider's login pages under fuzzing (docs/reliability.md): the password form's
 * fields and bodies, authorization requests with random parameters and the connector chooser
 * they lead to (two connectors), the connector pages' query strings and paths,
 * the callbacks' query strings and forms (with and without a binding cookie). Property: every
 * answer below 500, an HTML page or a JSON error, and no heap growth past a bound over the run.
 */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { SECRET_KEY } from '../../helpers/accounts-fixture.js';
import { fakePasswordConnector } from '../../helpers/fake-password-connector.js';
import { fuzzOptions } from '../../helpers/fuzz.js';
import { expectHandled, fuzzedServer, rawParameters } from '../../helpers/http-fuzz.js';
import { startPasswordIdpSvc } from '../../helpers/idp-svc.js';
import type { ConnectorSource } from '../../../src/idp/connectors/connector-source.js';
import { cleanUpTempDirs } from '../../helpers/temp-dir.js';

const ALICE = { userId: 'alice', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['dev'] };
const VERIFIER = 'fuzz-verifier-0123456789-0123456789-0123456789';

interface Interaction {
  readonly path: string;
  readonly cookie: string;
  readonly csrf: string;
}

describe('identity provider login pages under fuzzing', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  const fuzzed = fuzzedServer(() => {
    const directory = fakePasswordConnector({ alice: { password: 'alice-pw', identity: ALICE } });
    const other = fakePasswordConnector({});
    // Two connectors, so that the chooser is shown (one is chosen at once).
    const source: ConnectorSource = {
      list: () => [{ id: 'directory', name: 'Directory', type: 'ldap' }, { id: 'other', name: 'Other <b>&', type: 'ldap' }],
      get: (id) => (id === 'directory' ? directory : id === 'other' ? other : undefined),
    };
    return startPasswordIdpSvc(directory, {
      secretKey: SECRET_KEY,
      source,
      // Failed logins would lock the names they use; the lockout is tested in password-guard.test.ts.
      env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '100000' },
    });
  });
  const call = fuzzed.call;

  /** The command line client's authorization request, with `extra` parameters. */
  function authorizePath(extra = ''): string {
    const challenge = createHash('sha256').update(VERIFIER).digest('base64url');
    const query = new URLSearchParams({ client_id: 'svc-cli', redirect_uri: 'http://127.0.0.1/auth/callback', response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 'fuzz-state' });
    return `/api/idp/auth?${query}${extra === '' ? '' : `&${extra}`}`;
  }

  /** A login started by the command line's client, at the directory's password form. */
  async function startInteraction(): Promise<Interaction> {
    const start = await call(authorizePath());
    const path = new URL(start.headers.get('location') ?? '', fuzzed.url).pathname;
    const cookie = start.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    await start.arrayBuffer();
    const page = await call(`${path}/connector/directory`, { headers: { cookie } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    expect(csrf, 'the password form').to.not.equal('');
    return { path, cookie, csrf };
  }

  const formBody = fc.record({
    csrf: fc.constantFrom('own', 'random', 'none'),
    // Not 'unreachable', the stand-in's directory-down name: that answer is a 503 by design (tested with the login flow).
    username: fc.oneof(fc.constantFrom('alice', '', ' alice', 'ALICE', 'a'.repeat(300)), fc.string({ maxLength: 30 })),
    password: fc.oneof(fc.constantFrom('alice-pw', ''), fc.string({ maxLength: 30 })),
    extra: rawParameters(['username', 'password', 'csrf', 'connector_id']),
    contentType: fc.constantFrom('application/x-www-form-urlencoded', 'application/x-www-form-urlencoded', 'application/json', 'text/plain', 'multipart/form-data; boundary=x', ''),
  });

  it('answers the password form, whatever is posted, below 500 with a page (100 cases, seed 3806)', async () => {
    await fc.assert(
      fc.asyncProperty(formBody, async (input) => {
        const interaction = await startInteraction();
        const form = new URLSearchParams({ username: input.username, password: input.password });
        if (input.csrf !== 'none') form.set('csrf', input.csrf === 'own' ? interaction.csrf : 'x'.repeat(43));
        const body = `${form.toString()}${input.extra === '' ? '' : `&${input.extra}`}`;
        const headers: Record<string, string> = { cookie: interaction.cookie };
        if (input.contentType !== '') headers['content-type'] = input.contentType;
        await expectHandled(await call(`${interaction.path}/connector/directory`, { method: 'POST', headers, body }), `login form ${body.slice(0, 100)}`);
      }),
      fuzzOptions(3806, 100),
    );
  });

  const authorizeExtra = rawParameters(['connector_id', 'prompt', 'login_hint', 'ui_locales', 'max_age', 'acr_values', 'claims', 'scope', 'nonce', 'response_mode', 'id_token_hint', 'request', 'display']);

  it('answers an authorization request with random parameters, and the chooser it leads to, below 500 (200 cases, seed 3811)', async () => {
    await fc.assert(
      fc.asyncProperty(authorizeExtra, async (extra) => {
        const start = await call(authorizePath(extra));
        await expectHandled(start, `authorize ${extra.slice(0, 120)}`);
        const location = start.headers.get('location');
        if (location === null || !location.startsWith('/api/idp/interaction/')) return;
        const cookie = start.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
        const page = await call(location, { headers: { cookie } });
        const html = await expectHandled(page, `chooser after ${extra.slice(0, 120)}`);
        if (page.status === 200) expect(html).to.not.contain('Other <b>&', 'a connector name unescaped');
      }),
      fuzzOptions(3811, 200),
    );
  });

  const pageRequest = fc.record({
    target: fc.constantFrom('', '/connector/directory', '/connector/', '/connector/%2e%2e', '/connector/x', '/finish', '/consent', '/callback', '/../../jwks'),
    query: rawParameters(['connector_id', 'state', 'code', 'error', 'ui_locales', 'prompt', 'login_hint']),
    uid: fc.constantFrom('own', 'random', 'empty'),
    cookie: fc.boolean(),
    method: fc.constantFrom('GET', 'POST'),
  });

  it('answers the chooser, connector pages and their neighbours, whatever the path, query and cookie, below 500 (200 cases, seed 3807)', async () => {
    const interaction = await startInteraction();
    await fc.assert(
      fc.asyncProperty(pageRequest, async (input) => {
        const base = input.uid === 'own' ? interaction.path : input.uid === 'random' ? '/api/idp/interaction/AAAAAAAAAAAAAAAAAAAAA' : '/api/idp/interaction/';
        const path = `${base}${input.target}${input.query === '' ? '' : `?${input.query}`}`;
        const headers: Record<string, string> = input.cookie ? { cookie: interaction.cookie } : {};
        const init: RequestInit = input.method === 'POST' ? { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: input.query } : { headers };
        await expectHandled(await call(path, init), `${input.method} ${path.slice(0, 150)}`);
      }),
      fuzzOptions(3807, 200),
    );
  });

  const callbackRequest = fc.record({
    at: fc.constantFrom('/api/idp/callback', 'own'),
    params: rawParameters(['state', 'code', 'error', 'error_description', 'SAMLResponse', 'RelayState', 'SigAlg', 'Signature', 'iss', 'session_state']),
    method: fc.constantFrom('GET', 'POST'),
    binding: fc.constantFrom('none', 'random', 'empty'),
  });

  it('answers the callbacks, whatever the query or form and the binding cookie, below 500 (200 cases, seed 3808)', async () => {
    const interaction = await startInteraction();
    await fc.assert(
      fc.asyncProperty(callbackRequest, async (input) => {
        const path = input.at === 'own' ? `${interaction.path}/callback` : input.at;
        const cookies = [interaction.cookie, ...(input.binding === 'none' ? [] : [`svc.idp.login=${input.binding === 'random' ? 'x'.repeat(40) : ''}`])].join('; ');
        const init: RequestInit = input.method === 'POST'
          ? { method: 'POST', headers: { cookie: cookies, 'content-type': 'application/x-www-form-urlencoded' }, body: input.params }
          : { headers: { cookie: cookies } };
        await expectHandled(await call(input.method === 'GET' && input.params !== '' ? `${path}?${input.params}` : path, init), `${input.method} ${path} ${input.params.slice(0, 100)}`);
      }),
      fuzzOptions(3808, 200),
    );
  });

  it('kept its heap bounded over the run, and reached refusals and successes', () => {
    fuzzed.expectBoundedRun([303, 400, 401]);
  });
});
