/**
 * The audit trail of the local-account and rights paths, through a running server: each event
 * is triggered by a request, validated against docs/audit.schema.json, and checked for what it
 * must say (who, from where, the request id, why).
 */
import { expect } from 'chai';
import YAML from 'yaml';
import type { AuditEvent } from '../../src/audit/trail.js';
import { registerAuditSecret } from '../audit-capture.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { startBackend, closeServer, type Backend } from '../extensions/helpers.js';

const NEW_PASSWORD = 'alice-new-pass-2';
registerAuditSecret(NEW_PASSWORD);

describe('audit trail: logins, tokens, passwords, logout and rights refusals', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let server: TestServer;
  let audit: CollectedAudit;
  let echo: Backend;

  before(async () => {
    echo = await startBackend((_req, res) => res.end('ok'));
    const dir = accountsConfigDir({
      cm: { 'extension.config': YAML.stringify({ extensions: [{ name: 'echo', enabled: true, backend: { services: [{ url: echo.url }] } }] }) },
      rbac: { 'policy.csv': ['p, alice, extensions, get, */echo, allow', 'p, alice, extensions, post, */echo, deny'].join('\n') },
    });
    audit = collectAudit();
    server = await startTestServer(dir, { audit, env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '2', SVC_SESSION_FAILURE_WINDOW_SECONDS: '300' } });
  });
  after(async () => {
    await server.close();
    await closeServer(echo.server);
  });

  /** The one new event of `action` since `before`, validated against the schema. */
  function only(action: string, before: number): AuditEvent {
    const found = audit.events.slice(before).filter((e) => e.action === action);
    expect(found, action).to.have.length(1);
    validAuditEvent(found[0] as AuditEvent);
    return found[0] as AuditEvent;
  }

  it('a password login, failed then successful: method, user, source, request id, and why it failed', async () => {
    let mark = audit.events.length;
    const failed = await call(server.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: 'not-alices-password' } });
    expect(failed.status).to.equal(401);
    const failure = only('login', mark);
    expect(failure).to.deep.include({ category: 'authentication', type: 'start', outcome: 'failure', reason: 'wrong-password: wrong password', user: { name: 'alice' }, svc: { method: 'local' } });
    expect(failure.source).to.deep.include({ ip: '127.0.0.1', requestId: failed.headers.get('x-request-id') });
    mark = audit.events.length;
    await login(server.url, 'alice', PASSWORDS.alice);
    expect(only('login', mark)).to.deep.include({ outcome: 'success', user: { name: 'alice', id: 'alice' }, svc: { method: 'local' } });
  });

  it('a lockout starts at the limit, and the refused login says it was locked', async () => {
    const mark = audit.events.length;
    for (let i = 0; i < 2; i++) await call(server.url, 'POST', '/api/v1/session', { body: { username: 'bob', password: `wrong-${i}` } });
    expect(only('lockout-started', mark)).to.deep.include({ category: 'iam', type: 'change', outcome: 'success', user: { name: 'bob' }, reason: '2 failed logins' });
    const refused = await call(server.url, 'POST', '/api/v1/session', { body: { username: 'bob', password: PASSWORDS.bob } });
    expect(refused.status).to.equal(429);
    const logins = audit.events.slice(mark).filter((e) => e.action === 'login');
    expect(logins.at(-1)).to.deep.include({ outcome: 'failure', reason: 'locked', user: { name: 'bob' } });
  });

  it('an API token created and deleted names the token by its id, never the token', async () => {
    const token = await login(server.url, 'alice', PASSWORDS.alice);
    let mark = audit.events.length;
    const made = await call(server.url, 'POST', '/api/v1/account/alice/token', { token, body: { id: 'ci-token', expiresIn: '1h' } });
    expect(made.status).to.equal(200);
    registerAuditSecret(String(made.body['token']));
    expect(only('token-created', mark)).to.deep.include({ category: 'iam', type: 'creation', outcome: 'success', svc: { account: 'alice', tokenId: 'ci-token', expiresInSeconds: 3600 } });
    mark = audit.events.length;
    expect((await call(server.url, 'DELETE', '/api/v1/account/alice/token/ci-token', { token })).status).to.equal(200);
    const deleted = only('token-deleted', mark);
    expect(deleted).to.deep.include({ type: 'deletion', svc: { account: 'alice', tokenId: 'ci-token' } });
    expect(deleted.user).to.deep.equal({ name: 'alice', id: 'alice', domain: 'svc' });
  });

  it('a password change, refused and then done', async () => {
    const token = await login(server.url, 'alice', PASSWORDS.alice);
    let mark = audit.events.length;
    const refused = await call(server.url, 'PUT', '/api/v1/account/password', { token, body: { currentPassword: 'not-alices-password', newPassword: NEW_PASSWORD } });
    expect(refused.status).to.equal(403);
    expect(only('password-changed', mark)).to.deep.include({ outcome: 'failure', reason: 'the current password is incorrect', svc: { account: 'alice' } });
    mark = audit.events.length;
    const done = await call(server.url, 'PUT', '/api/v1/account/password', { token, body: { currentPassword: PASSWORDS.alice, newPassword: NEW_PASSWORD } });
    expect(done.status).to.equal(200);
    expect(only('password-changed', mark)).to.deep.include({ category: 'iam', type: 'change', outcome: 'success', svc: { account: 'alice' } });
  });

  it('a logout ends the session, named by the token id', async () => {
    const token = await login(server.url, 'admin', PASSWORDS.admin);
    const mark = audit.events.length;
    expect((await call(server.url, 'DELETE', '/api/v1/session', { token })).status).to.equal(200);
    expect(audit.events.slice(mark).filter((e) => e.action === 'logout'), 'no separate logout event').to.have.length(0);
    const ended = only('session-ended', mark);
    expect(ended).to.deep.include({ category: 'session', type: 'end', outcome: 'success', user: { id: 'admin', domain: 'svc' } });
    expect(ended.svc).to.include({ via: 'logout', kind: 'local' });
    expect(ended.svc?.['sessionId']).to.be.a('string').and.not.equal('');
    expect(ended.source).to.include({ ip: '127.0.0.1' });
  });

  it('rights refused on the API: subject, resource, action, object and the default that decided', async () => {
    const token = await login(server.url, 'admin', PASSWORDS.admin);
    const allowed = await call(server.url, 'GET', '/api/v1/account/bob', { token });
    expect(allowed.status).to.equal(200);
    const alice = await login(server.url, 'alice', NEW_PASSWORD);
    const mark = audit.events.length;
    const refused = await call(server.url, 'GET', '/api/v1/account/bob', { token: alice });
    expect(refused.status).to.equal(403);
    const event = only('rights-refused', mark);
    expect(event).to.deep.include({ category: 'web', type: 'denied', outcome: 'success', user: { name: 'alice', id: 'alice', domain: 'svc', groups: [] } });
    expect(event.reason).to.equal('default: no line matches the caller and policy.default is not set');
    expect(event.svc).to.include({ via: 'api', subject: 'alice', resource: 'accounts', action: 'get', object: 'bob', rule: event.reason });
    expect(event.source?.requestId).to.equal(refused.headers.get('x-request-id'));
  });

  it('rights refused on the proxy names the deny line; an allowed proxied request records nothing', async () => {
    const token = await login(server.url, 'alice', NEW_PASSWORD);
    const mark = audit.events.length;
    const allowed = await fetch(`${server.url}/api/v1/extensions/echo/x`, { headers: { authorization: `Bearer ${token}` } });
    expect(allowed.status).to.equal(200);
    await allowed.text();
    expect(audit.events.slice(mark)).to.deep.equal([]);
    const refused = await fetch(`${server.url}/api/v1/extensions/echo/x`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'user-agent': 'audit-test/1' }, body: 'hi' });
    expect(refused.status).to.equal(403);
    await refused.text();
    const event = only('rights-refused', mark);
    expect(event.reason).to.equal('deny line: p, alice, extensions, post, */echo, deny');
    expect(event.svc).to.include({ via: 'proxy', subject: 'alice', resource: 'extensions', action: 'post', object: '*/echo' });
    expect(event.source).to.deep.equal({ ip: '127.0.0.1', userAgent: 'audit-test/1', requestId: refused.headers.get('x-request-id') });
  });

  it('a request of an API token refused by the rights names the token by the id shown at its creation, on the API and the proxy', async () => {
    const session = await login(server.url, 'alice', NEW_PASSWORD);
    let mark = audit.events.length;
    const made = await call(server.url, 'POST', '/api/v1/account/alice/token', { token: session, body: { id: 'ci-refused' } });
    expect(made.status).to.equal(200);
    const apiToken = String(made.body['token']);
    registerAuditSecret(apiToken);
    expect(only('token-created', mark).svc).to.include({ account: 'alice', tokenId: 'ci-refused' });
    const shown = await call(server.url, 'GET', '/api/v1/account/alice', { token: session });
    expect(JSON.stringify(shown.body), 'the id svc account get shows').to.include('"id":"ci-refused"');

    mark = audit.events.length;
    const refused = await call(server.url, 'GET', '/api/v1/account/bob', { token: apiToken });
    expect(refused.status).to.equal(403);
    expect(only('rights-refused', mark).svc).to.include({ via: 'api', tokenKind: 'apiKey', tokenId: 'ci-refused' });

    mark = audit.events.length;
    const proxied = await fetch(`${server.url}/api/v1/extensions/echo/x`, { method: 'POST', headers: { authorization: `Bearer ${apiToken}` }, body: 'hi' });
    expect(proxied.status).to.equal(403);
    await proxied.text();
    expect(only('rights-refused', mark).svc).to.include({ via: 'proxy', tokenKind: 'apiKey', tokenId: 'ci-refused' });
  });
});
