/**
 * Workload identity end to end: a real svc with workload.config trusting a GitHub Actions
 * issuer and a Kubernetes service account issuer (HTTPS stand-ins on a test CA), a real
 * backend behind the extension proxy, and RFC 8693 exchanges over HTTP. Each refusal names
 * its check; an issuer that cannot be reached answers 503; a workload never gets a local
 * account's or a role's rights through its name or its groups.
 */
import { expect } from 'chai';
import { exportSPKI, importJWK, SignJWT, type CryptoKey } from 'jose';
import { rmSync } from 'node:fs';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { startFakeGithubActions, type FakeGithubActions } from '../helpers/fake-github-actions.js';
import { startFakeKubernetesIssuer, type FakeKubernetesIssuer } from '../helpers/fake-kubernetes-issuer.js';
import { makeSigningKey, signToken, unsecuredToken } from '../helpers/fake-oidc-keys.js';
import type { AuditEvent } from '../../src/audit/trail.js';
import { collectAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AUDIENCE, exchange, GRANT, MAIN, MAIN_SUBJECT, workloadConfigDir, type Answer } from '../helpers/workload-setup.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('e2e: workload identity token exchange', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let github: FakeGithubActions;
  let kubernetes: FakeKubernetesIssuer;
  let unreachable: FakeGithubActions;
  let backend: Backend;
  let server: TestServer;
  let dir: string;
  const audit = collectAudit();

  before(async () => {
    [github, unreachable, kubernetes, backend] = await Promise.all([startFakeGithubActions(), startFakeGithubActions(), startFakeKubernetesIssuer(), echoBackend('echo')]);
    dir = workloadConfigDir(github, kubernetes, backend.url, [
      { name: 'down', issuer: unreachable.issuer, rootCA: unreachable.caPem, audiences: [AUDIENCE] },
    ]);
    // Many refusals below share one subject; the throttle's lockout is shown in test/workload/exchange.test.ts.
    server = await startTestServer(dir, { env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '1000' }, audit });
  });

  after(async () => {
    await server?.close(1000);
    await Promise.all([github?.close(), kubernetes?.close(), backend?.close()]);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const call = (path: string, token: string, method = 'GET'): Promise<Response> =>
    fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });

  function expectRefused(answer: Answer, check: string, token?: string): void {
    expect(answer.status, JSON.stringify(answer.body)).to.equal(400);
    expect(answer.body['error']).to.equal('invalid_request');
    expect(answer.body['error_description']).to.match(new RegExp(`^check '${check}' failed: `));
    expect(answer.headers.get('cache-control')).to.equal('no-store');
    if (token !== undefined) {
      expect(JSON.stringify(answer.body)).to.not.include(token.split('.')[2] ?? token);
      expect(server.logs()).to.not.include(token);
    }
  }

  it('a main-branch job of the allowed org exchanges its token and calls the extension its rule allows, and is refused on another', async () => {
    const subjectToken = await github.token(MAIN, AUDIENCE);
    const answer = await exchange(server.url, subjectToken);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(answer.body).to.include({ issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 900 });
    expect(answer.headers.get('cache-control')).to.equal('no-store');
    const token = answer.body['access_token'] as string;
    // The exchange is a login in the audit trail: method workload, the trust entry, the subject, from where.
    const login = audit.of('login').at(-1);
    expect(login).to.deep.include({ outcome: 'success', user: { name: MAIN_SUBJECT, id: MAIN_SUBJECT, groups: ['gh-my-org'] }, source: { ip: '127.0.0.1' } });
    expect(login?.svc).to.deep.include({ method: 'workload' });
    validAuditEvent(login as AuditEvent);

    const tools = await call('/api/v1/extensions/tools/hello', token);
    expect(tools.status).to.equal(200);
    expect(((await tools.json()) as { url: string }).url).to.equal('/hello');
    const other = await call('/api/v1/extensions/secret/hello', token);
    expect(other.status).to.equal(403);
    expect(((await other.json()) as { message: string }).message).to.include(`'${MAIN_SUBJECT}' may not use extension 'secret'`);
  });

  it('shows the workload in userinfo, with its issuer and groups, and accepts a JSON request too', async () => {
    const answer = await exchange(server.url, await github.token(MAIN, AUDIENCE), 'json');
    expect(answer.status).to.equal(200);
    const info = (await (await call('/api/v1/session/userinfo', answer.body['access_token'] as string)).json()) as Record<string, unknown>;
    expect(info).to.include({ loggedIn: true, username: MAIN_SUBJECT, iss: github.issuer });
    expect(info['groups']).to.deep.equal(['gh-my-org']);
    const expiresAt = info['expiresAt'] as number;
    expect(expiresAt - Date.now() / 1000).to.be.within(895, 901);
  });

  it('a tag job of the org exchanges too (a glob of the ref list) but its subject has no rule', async () => {
    const answer = await exchange(server.url, await github.token({ ...MAIN, ref: 'refs/tags/v1.2.0' }, AUDIENCE));
    expect(answer.status).to.equal(200);
    expect((await call('/api/v1/extensions/tools/hello', answer.body['access_token'] as string)).status).to.equal(403);
  });

  it('is revocable like any session: after logout the token is refused', async () => {
    const token = (await exchange(server.url, await github.token(MAIN, AUDIENCE))).body['access_token'] as string;
    expect((await call('/api/v1/extensions/tools/x', token)).status).to.equal(200);
    expect((await call('/api/v1/session', token, 'DELETE')).status).to.equal(200);
    const after = await call('/api/v1/extensions/tools/x', token);
    expect(after.status).to.equal(401);
  });

  describe('refusals, each naming its check', () => {
    const now = (): number => Math.floor(Date.now() / 1000);

    it('another org', async () => {
      const token = await github.token({ ...MAIN, owner: 'other-org' }, AUDIENCE);
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'claims', token);
      expect(answer.body['error_description']).to.equal("check 'claims' failed: claim 'repository_owner' is not 'my-org'");
      const refused = audit.of('login').at(-1);
      expect(refused).to.deep.include({ outcome: 'failure', reason: "invalid-token: check 'claims' failed: claim 'repository_owner' is not 'my-org'" });
      validAuditEvent(refused as AuditEvent);
    });

    it('another branch', async () => {
      const token = await github.token({ ...MAIN, ref: 'refs/heads/dev' }, AUDIENCE);
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'claims', token);
      expect(answer.body['error_description']).to.equal("check 'claims' failed: claim 'ref' matches none of 'refs/heads/main', 'refs/tags/v*'");
    });

    it('a wrong audience', async () => {
      const token = await github.token(MAIN, 'https://github.com/my-org');
      expectRefused(await exchange(server.url, token), 'aud', token);
    });

    it('expired', async () => {
      const token = await github.token(MAIN, AUDIENCE, { iat: now() - 600, nbf: now() - 600, exp: now() - 120 });
      expectRefused(await exchange(server.url, token), 'exp', token);
    });

    it('not yet valid', async () => {
      const token = await github.token(MAIN, AUDIENCE, { nbf: now() + 300, exp: now() + 900 });
      expectRefused(await exchange(server.url, token), 'nbf', token);
    });

    it('issued in the future', async () => {
      const token = await github.token(MAIN, AUDIENCE, { iat: now() + 300, nbf: null, exp: now() + 900 });
      expectRefused(await exchange(server.url, token), 'iat', token);
    });

    it('an unknown issuer', async () => {
      const rogue = await makeSigningKey();
      const token = await signToken(rogue, { iss: 'https://token.actions.example.invalid', sub: 'repo:my-org/app:ref:refs/heads/main', aud: AUDIENCE, iat: now(), exp: now() + 300 });
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'iss', token);
      expect(answer.body['error_description']).to.equal("check 'iss' failed: no workload issuer is configured for iss 'https://token.actions.example.invalid'");
    });

    it('alg none', async () => {
      const token = unsecuredToken({ iss: github.issuer, sub: 'repo:my-org/app:ref:refs/heads/main', aud: AUDIENCE, repository_owner: 'my-org', ref: 'refs/heads/main', iat: now(), exp: now() + 300 });
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'alg');
      expect(answer.body['error_description']).to.equal("check 'alg' failed: alg 'none' is not one the issuer 'github' publishes and svc accepts (RS256)");
    });

    it('HS256 signed with the issuer\'s public key as the secret', async () => {
      const publicPem = await exportSPKI((await importJWK(github.key.publicJwk, 'RS256', { extractable: true })) as CryptoKey);
      const claims = { iss: github.issuer, sub: 'repo:my-org/app:ref:refs/heads/main', aud: AUDIENCE, repository_owner: 'my-org', ref: 'refs/heads/main', jti: 'forged' };
      const token = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: github.key.kid }).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(publicPem));
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'alg', token);
      expect(answer.body['error_description']).to.include("alg 'HS256' is not one the issuer 'github' publishes");
    });

    it('a key not in the issuer\'s set, after at most one fetch of it', async () => {
      const before = github.jwksFetches;
      const rogue = await makeSigningKey('not-in-the-set');
      const token = await github.token(MAIN, AUDIENCE, {}, rogue);
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'key', token);
      expect(answer.body['error_description']).to.include("no key of the issuer's key set matches the token's kid 'not-in-the-set'");
      expect(github.jwksFetches - before).to.be.at.most(1);
      // Within the minute after a fetch, another unknown kid fetches nothing.
      const again = await exchange(server.url, await github.token(MAIN, AUDIENCE, {}, await makeSigningKey('also-unknown')));
      expectRefused(again, 'key');
      expect(github.jwksFetches - before).to.be.at.most(1);
    });

    it('a signature that does not verify (payload changed after signing)', async () => {
      const token = await github.token(MAIN, AUDIENCE);
      const [h, p, s] = token.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
      const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, repository_owner: 'my-org', ref: 'refs/heads/main', sub: 'repo:my-org/admin:ref:refs/heads/main' })).toString('base64url')}.${s}`;
      expectRefused(await exchange(server.url, forged), 'signature', forged);
    });

    it('an oversize token', async () => {
      const token = await github.token(MAIN, AUDIENCE, { padding: 'x'.repeat(20_000) });
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'size', token);
      expect(answer.body['error_description']).to.equal("check 'size' failed: the subject token is larger than 16384 bytes");
    });

    it('a replay: the same subject token a second time', async () => {
      const token = await github.token(MAIN, AUDIENCE);
      expect((await exchange(server.url, token)).status).to.equal(200);
      expectRefused(await exchange(server.url, token), 'replay', token);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).to.match(/^svc_login_outcomes_total\{method="workload",connector="[^"]+",reason="refused"\} 1$/m);
      expect(metrics).to.match(/^svc_login_outcomes_total\{method="workload",connector="[^"]+",reason="ok"\} \d+$/m);
    });

    it('a wrong grant_type or subject_token_type, as RFC 6749 errors', async () => {
      const token = await github.token(MAIN, AUDIENCE);
      const grant = await exchange(server.url, token, 'form', { grant_type: 'password' });
      expect(grant.status).to.equal(400);
      expect(grant.body).to.deep.equal({ error: 'unsupported_grant_type', error_description: `grant_type must be ${GRANT}` });
      expectRefused(await exchange(server.url, token, 'form', { subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }), 'request', token);
      // Neither refusal used the token up.
      expect((await exchange(server.url, token)).status).to.equal(200);
    });
  });

  it('answers 503 temporarily_unavailable when the issuer cannot be reached, never 401 and never a token', async () => {
    const token = await unreachable.token(MAIN, AUDIENCE);
    await unreachable.goDown();
    const answer = await exchange(server.url, token);
    expect(answer.status).to.equal(503);
    expect(answer.body['error']).to.equal('temporarily_unavailable');
    expect(answer.body['error_description']).to.match(/^the discovery document of workload issuer 'down' cannot be read from https:\/\/127\.0\.0\.1:\d+\/\.well-known\/openid-configuration: /);
    expect(answer.body).to.not.have.property('access_token');
  });

  describe('a workload never gets a local account\'s or a role\'s rights', () => {
    it('a service account named like the local account ci is workload:k8s:ci, and its group ci is dropped', async () => {
      const subjectToken = await kubernetes.token({ namespace: 'ci', serviceAccount: 'ci' }, AUDIENCE);
      const answer = await exchange(server.url, subjectToken);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      const token = answer.body['access_token'] as string;
      const info = (await (await call('/api/v1/session/userinfo', token)).json()) as Record<string, unknown>;
      expect(info).to.include({ username: 'workload:k8s:ci', iss: kubernetes.issuer });
      expect(info['groups']).to.deep.equal(['sa-ci']);
      expect((await call('/api/v1/extensions/secret/x', token)).status).to.equal(403);
      const canI = (await (await call('/api/v1/account/can-i/extensions/get/*%2Fsecret', token)).json()) as { value: string };
      expect(canI.value).to.equal('no');
      expect(server.logs()).to.include("workload group 'ci' dropped: it is the name of the local account 'ci'");
    });

    it('groups from claims that name a role, a workload, admin or a local account are dropped; the others count', async () => {
      const subjectToken = await github.token(MAIN, AUDIENCE, { svc_groups: ['role:secret', ' Role:secret', 'workload:github:x', 'Admin', 'ci', 'deployers'] });
      const token = (await exchange(server.url, subjectToken)).body['access_token'] as string;
      const info = (await (await call('/api/v1/session/userinfo', token)).json()) as Record<string, unknown>;
      expect(info['groups']).to.deep.equal(['deployers', 'gh-my-org']);
      expect((await call('/api/v1/extensions/secret/x', token)).status).to.equal(403);
      expect((await call('/api/v1/extensions/deploy/x', token)).status).to.equal(200);
    });

    it('a pod in another namespace is refused by the nested kubernetes.io claim', async () => {
      const token = await kubernetes.token({ namespace: 'prod', serviceAccount: 'ci' }, AUDIENCE);
      const answer = await exchange(server.url, token);
      expectRefused(answer, 'claims', token);
      expect(answer.body['error_description']).to.equal("check 'claims' failed: claim 'kubernetes\\.io.namespace' is not 'ci'");
    });
  });
});
