/**
 * The GitLab connector against the local GitLab stand-in (test/helpers/fake-gitlab.ts) over
 * HTTPS, through the real upstream fetch with the stand-in's CA as rootCA: the authorize URL and
 * scopes, the code exchange, the user and the groups claim, the `groups` filter and
 * getGroupsPermission, refusals in words, GitLab's error answers, refresh through the rotating
 * refresh token, and the certificate check.
 */
import { expect } from 'chai';
import type { Connector, Identity, LoginContext } from '../../../connectors/connector.js';
import { gitlab } from '../../../connectors/gitlab/index.js';
import { CANCELLED, NOT_IN_GROUPS } from '../../../connectors/gitlab/gitlab.js';
import { startFakeGitlab, type FakeGitlab } from '../../helpers/fake-gitlab.js';
import { browserConnector, roundTrip } from '../../helpers/oauth-round-trip.js';
import { refusal, upstreamConnectors } from '../connector-suite.js';
import { ALICE_GROUPS, CALLBACK, CLIENT_ID, CLIENT_SECRET, gitlabConfig, SECRETS, USERS } from './fixture.js';

describe('the GitLab connector (against a local GitLab stand-in)', function () {
  this.timeout(20_000);
  let fake: FakeGitlab;
  const opened = upstreamConnectors(gitlab, 'gitlab');
  const { lines, text } = opened;

  before(async () => {
    fake = await startFakeGitlab({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: CALLBACK, users: USERS });
  });
  after(async () => {
    await opened.close();
    await fake?.close();
  });
  beforeEach(() => {
    opened.clear();
    fake.declining = false;
  });

  const ctx = (wantGroups = true): LoginContext => ({ callbackUrl: CALLBACK, wantGroups, signal: AbortSignal.timeout(10_000) });

  const open = (extra: Record<string, unknown> = {}, secrets: Record<string, string> = SECRETS): Connector => opened.open(gitlabConfig(fake, extra), secrets);

  const login = (connector: Connector, as: string, wantGroups = true): Promise<Identity> => {
    fake.signedIn = as;
    return roundTrip(connector, ctx(wantGroups), fake);
  };

  it('sends the browser to baseURL/oauth/authorize with the code flow, the state and Dex\'s scopes', async () => {
    const start = await browserConnector(open()).begin('the-state', ctx(false));
    if (start.via !== 'redirect') throw new Error('expected a redirect');
    const url = new URL(start.url);
    expect(`${url.origin}${url.pathname}`).to.equal(`${fake.url}/oauth/authorize`);
    expect(Object.fromEntries(url.searchParams)).to.deep.equal({ client_id: CLIENT_ID, redirect_uri: CALLBACK, response_type: 'code', scope: 'read_user openid', state: 'the-state' });
    const plain = await browserConnector(open({ groups: undefined })).begin('s', ctx(false));
    expect(plain.via === 'redirect' && new URL(plain.url).searchParams.get('scope')).to.equal('read_user');
  });

  it('exchanges the code, reads /api/v4/user and the groups claim, filtered to `groups`', async () => {
    const identity = await login(open(), 'alice');
    expect(identity).to.deep.include({ userId: '2001', username: 'Alice Liddell', preferredUsername: 'alice', email: 'alice@example.org', emailVerified: true });
    expect(identity.groups).to.have.members(ALICE_GROUPS);
    expect(fake.lastScope()).to.equal('read_user openid');
  });

  it('without `groups`: every group when groups are asked for, none (and no userinfo) otherwise', async () => {
    expect((await login(open({ groups: undefined }), 'alice')).groups).to.have.members(['acme', 'acme/ops', 'acme/dev', 'hobby']);
    expect((await login(open({ groups: undefined }), 'alice', false)).groups).to.deep.equal([]);
    expect(fake.lastScope()).to.equal('read_user');
  });

  it('adds <group>:<role> with getGroupsPermission, an ancestor\'s role counting', async () => {
    const identity = await login(open({ groups: undefined, getGroupsPermission: true }), 'alice');
    expect(identity.groups).to.have.members(['acme', 'acme:developer', 'acme/ops', 'acme/ops:owner', 'acme/dev', 'acme/dev:developer', 'hobby']);
  });

  it('uses the username as the user id with useLoginAsID', async () => {
    expect((await login(open({ useLoginAsID: true }), 'alice')).userId).to.equal('alice');
  });

  it('refuses a user in none of `groups`, and a user who declines, in words', async () => {
    const outsider = await refusal(login(open(), 'bob'));
    expect(outsider.message).to.equal(NOT_IN_GROUPS);
    expect(outsider.code).to.equal('permission_denied');
    fake.declining = true;
    expect((await refusal(login(open(), 'alice'))).message).to.equal(CANCELLED);
  });

  it('a wrong client secret: the log says to check the credentials, never the secret', async () => {
    const err = await refusal(login(open({}, { 'gitlab.clientSecret': 'not-the-secret-5b5b5b' }), 'alice'));
    expect(err.message).to.equal('the identity source could not complete the login; the server log says why');
    expect(text.join('')).to.contain('invalid_client: check clientID and clientSecret');
    expect(text.join('')).not.to.contain('not-the-secret-5b5b5b');
  });

  it('a 5xx of the API or the token endpoint: unavailable, try again later', async () => {
    fake.fail('/api/v4/user', 500);
    expect((await refusal(login(open(), 'alice'))).message).to.equal('the identity source is unreachable; try again later');
    fake.fail('/oauth/token', 502);
    expect((await refusal(login(open(), 'alice'))).message).to.equal('the identity source is unreachable; try again later');
    fake.fail('/oauth/userinfo', 503);
    expect((await refusal(login(open(), 'alice'))).message).to.equal('the identity source is unreachable; try again later');
    expect(text.join('')).to.contain('GET /api/v4/user answered HTTP 500');
  });

  it('refreshes through the refresh token after the access token expired; a used or revoked one ends it', async () => {
    const connector = open();
    const first = await login(connector, 'alice');
    fake.expireAccessTokens();
    const second = await connector.refresh?.(first, ctx());
    expect(second?.userId).to.equal('2001');
    expect(second?.groups).to.have.members(ALICE_GROUPS);
    expect(second?.connectorData).not.to.equal(first.connectorData);
    // GitLab rotated the refresh token: the first one is spent.
    expect(await connector.refresh?.(first, ctx())).to.equal(null);
    expect(text.join('')).to.contain('the refresh_token grant was refused: invalid_grant');
    fake.revokeAll();
    if (second === undefined || second === null) throw new Error('no refreshed identity');
    expect(await connector.refresh?.(second, ctx())).to.equal(null);
    expect(text.join('')).not.to.match(/gl(pat|rt)_[0-9a-f]{24}/);
  });

  it('trusts the test CA given as rootCA or rootCAData; without it the login fails, logged naming the connector and the host', async () => {
    expect((await login(open({ rootCA: undefined, rootCAData: Buffer.from(fake.caPem).toString('base64') }), 'alice')).userId).to.equal('2001');
    const err = await refusal(login(open({ rootCA: undefined }), 'alice'));
    expect(err.message).to.equal('the identity source is unreachable; try again later');
    const line = lines.find((l) => l.level === 50 && /certificate/.test(l.msg));
    expect(line?.msg).to.equal(`the certificate of ${fake.host} is not trusted: give its CA as rootCA`);
    expect(line).to.deep.include({ connector: 'gitlab', host: fake.host });
  });
});
