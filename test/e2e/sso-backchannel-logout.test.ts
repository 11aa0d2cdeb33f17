/**
 * OIDC Back-Channel Logout with svc as the relying party: a real oidc-provider (test-provider.ts)
 * ends a user's session there and sends svc a logout token naming its `sid`; svc ends the svc
 * session that login made (its token refused at once, gone from the list) and no other. A token
 * svc cannot verify is answered 400 with an OAuth error and recorded in the audit trail.
 */
import { expect } from 'chai';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { setupSso, ssoLogin, userInfo, type SsoSetup } from '../helpers/sso-setup.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { logOutAtProvider } from '../helpers/test-provider.js';

describe('e2e: back-channel logout from the SSO provider', function () {
  this.timeout(30_000);
  let setup: SsoSetup;
  let audit: CollectedAudit;

  before(async function () {
    audit = collectAudit();
    setup = await setupSso({ ca: makeTestCa(), backchannelLogout: true, audit });
    setup.provider.accounts.set('alice', { groups: ['sso-team'] });
  });
  after(() => setup?.close());

  it('ends the svc session of the provider session that logged out, and only that one', async function () {
    const first = await ssoLogin(setup, 'alice');
    const second = await ssoLogin(setup, 'alice');
    const listed = await fetch(`${setup.svc.url}/api/v1/session/list`, { headers: { authorization: `Bearer ${second.token}` } });
    const items = ((await listed.json()) as { items: Record<string, unknown>[] }).items;
    expect(items.map((i) => [i['kind'], i['client']])).to.deep.equal([['sso', 'browser'], ['sso', 'browser']]);

    await logOutAtProvider(first.browser, setup.provider.issuer);

    expect(await userInfo(setup.svc.url, first.token)).to.deep.equal({ loggedIn: false });
    const refused = await fetch(`${setup.svc.url}/api/v1/session/list`, { headers: { authorization: `Bearer ${first.token}` } });
    expect(refused.status).to.equal(401);
    expect(await userInfo(setup.svc.url, second.token)).to.deep.include({ loggedIn: true, username: 'alice' });
    const left = await fetch(`${setup.svc.url}/api/v1/session/list`, { headers: { authorization: `Bearer ${second.token}` } });
    expect(((await left.json()) as { items: unknown[] }).items).to.have.length(1);
    const ended = audit.of('session-ended');
    expect(ended.map((e) => e.svc?.['via'])).to.deep.equal(['backchannel']);
    expect(ended[0]?.user, 'the SSO user alice of the provider').to.deep.equal({ id: 'alice', domain: setup.provider.issuer });
    expect(setup.svc.logs()).to.include('"msg":"back-channel logout"');
  });

  it('answers 400 invalid_request to a logout token not signed by the provider, and records the refusal', async function () {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const kid = String((await exportJWK(publicKey)).kid ?? 'key-1');
    const forged = await new SignJWT({ events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, sid: 'x' })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'logout+jwt' })
      .setIssuer(setup.provider.issuer).setAudience('svc').setIssuedAt().setJti('forged-1').setSubject('alice')
      .sign(privateKey);
    const res = await fetch(`${setup.svc.url}/auth/backchannel-logout`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ logout_token: forged }),
    });
    expect(res.status).to.equal(400);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const body = (await res.json()) as Record<string, string>;
    expect(body['error']).to.equal('invalid_request');
    expect(body['error_description']).to.match(/^the logout token is invalid: ERR_JW(S|KS)_/);
    const refusal = audit.of('backchannel-logout').at(-1);
    expect(refusal).to.deep.include({ outcome: 'failure', reason: body['error_description'] });
    expect(JSON.stringify(audit.events)).not.to.include(forged);
  });

  it('answers 400 to a form without exactly one logout_token', async function () {
    const res = await fetch(`${setup.svc.url}/auth/backchannel-logout`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'logout_token=a&logout_token=b',
    });
    expect(res.status).to.equal(400);
    expect(await res.json()).to.deep.equal({ error: 'invalid_request', error_description: "the form must hold exactly one non-empty 'logout_token'" });
  });

  /** POSTs a form with one logout token; the status and the OAuth error body. */
  async function postToken(token: string): Promise<{ status: number; body: Record<string, string> }> {
    const res = await fetch(`${setup.svc.url}/auth/backchannel-logout`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ logout_token: token }),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, string>) };
  }

  it('refuses tokens the provider\'s own key signed with a bad claim, and a replay of one it accepted', async function () {
    const now = Math.floor(Date.now() / 1000);
    let n = 0;
    const claims = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
      iss: setup.provider.issuer, aud: 'svc', iat: now, exp: now + 120, jti: `signed-${++n}-${now}`, sub: 'nobody', sid: 'no-such-sid',
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, ...over,
    });
    const sign = (c: Record<string, unknown>) => setup.provider.sign(Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)), 'logout+jwt');
    const refusals: [string, Record<string, unknown>, string | RegExp][] = [
      ['another audience', { aud: 'another-client' }, /^the logout token's aud is not accepted: /],
      ['another issuer', { iss: 'https://other-provider.example' }, /^the logout token's iss is not accepted: /],
      ['no events claim', { events: undefined }, 'the logout token has no events claim'],
      ['a nonce', { nonce: 'n-1' }, 'the logout token has a nonce (an ID token is not a logout token)'],
      ['expired', { iat: now - 300, exp: now - 60 }, 'the logout token has expired'],
      ['too old', { iat: now - 700, exp: now + 60 }, 'the logout token is older than 600 s (iat)'],
      ['neither sub nor sid', { sub: undefined, sid: undefined }, 'the logout token names neither sub nor sid'],
    ];
    for (const [what, over, message] of refusals) {
      const reply = await postToken(await sign(claims(over)));
      expect(reply.status, what).to.equal(400);
      expect(reply.body['error'], what).to.equal('invalid_request');
      if (typeof message === 'string') expect(reply.body['error_description'], what).to.equal(message);
      else expect(reply.body['error_description'], what).to.match(message);
    }
    // A good token (for a session nobody has) is accepted once; sent again, refused.
    const good = await sign(claims());
    expect((await postToken(good)).status).to.equal(200);
    expect(await postToken(good)).to.deep.equal({ status: 400, body: { error: 'invalid_request', error_description: 'the logout token was used before (jti)' } });
    expect(audit.of('backchannel-logout').filter((e) => e.outcome === 'failure').map((e) => e.reason)).to.include('the logout token was used before (jti)');
  });

  it('answers 400 to a body over 16 KiB, declared or streamed, before reading a token from it', async function () {
    const big = `logout_token=${'a'.repeat(16 * 1024)}`;
    const declared = await fetch(`${setup.svc.url}/auth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: big });
    expect(declared.status).to.equal(400);
    expect(await declared.json()).to.deep.equal({ error: 'invalid_request', error_description: 'the back-channel logout request is larger than 16384 bytes' });
    // Chunked, without a Content-Length: counted as it arrives.
    const chunks = [big.slice(0, 8192), big.slice(8192)];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
    });
    const streamed = await fetch(`${setup.svc.url}/auth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, duplex: 'half' } as RequestInit);
    expect(streamed.status).to.equal(400);
    expect(await streamed.json()).to.deep.equal({ error: 'invalid_request', error_description: 'the back-channel logout request is larger than 16384 bytes' });
  });

  it('bounds the requests of one source address: past its burst, 429 with Retry-After, before any check', async function () {
    const post = () => fetch(`${setup.svc.url}/auth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    // The tests above spent some of this address's burst (50, refilled at 10 a second): full again first.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    // At once, so the refill (10 a second) cannot keep up however loaded the machine is.
    const replies = await Promise.all(Array.from({ length: 80 }, post));
    const statuses = replies.map((r) => r.status);
    const limited = replies.find((r) => r.status === 429);
    for (const r of replies) if (r !== limited) await r.body?.cancel();
    expect(limited, `statuses: ${statuses.join(',')}`).not.to.equal(undefined);
    expect(statuses.filter((s) => s === 400).length).to.be.at.least(50);
    expect(Number(limited?.headers.get('retry-after'))).to.be.at.least(1);
    expect((await limited?.json()) as Record<string, string>).to.deep.include({ error: 'temporarily_unavailable' });
  });
});
