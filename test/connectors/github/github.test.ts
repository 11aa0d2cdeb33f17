/**
 * The GitHub connector against the local GitHub stand-in (test/helpers/fake-github.ts) over
 * HTTPS, through the real upstream fetch with the stand-in's CA as rootCA: the authorize URL,
 * the code exchange, the user and email, orgs and teams over several pages, groups by
 * teamNameField, refusals in words, GitHub's error answers, refresh, and the certificate check.
 */
import { expect } from 'chai';
import type { Connector, Identity, LoginContext } from '../../../connectors/connector.js';
import { github } from '../../../connectors/github/index.js';
import { CANCELLED, NO_VERIFIED_EMAIL, NOT_A_MEMBER } from '../../../connectors/github/github.js';
import { startFakeGithub, type FakeGithub } from '../../helpers/fake-github.js';
import { browserConnector, roundTrip } from '../../helpers/oauth-round-trip.js';
import { refusal, upstreamConnectors } from '../connector-suite.js';
import { ALICE_GROUPS, CALLBACK, CLIENT_ID, CLIENT_SECRET, githubConfig, SECRETS, USERS } from './fixture.js';

describe('the GitHub connector (against a local GitHub stand-in)', function () {
  this.timeout(20_000);
  let fake: FakeGithub;
  const opened = upstreamConnectors(github, 'github');
  const { lines, text } = opened;

  before(async () => {
    fake = await startFakeGithub({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, users: USERS });
  });
  after(async () => {
    await opened.close();
    await fake?.close();
  });
  beforeEach(() => {
    opened.clear();
    fake.signedIn = 'alice';
    fake.declining = false;
    fake.requests.length = 0;
  });

  const ctx = (wantGroups = true): LoginContext => ({ callbackUrl: CALLBACK, wantGroups, signal: AbortSignal.timeout(10_000) });

  const open = (extra: Record<string, unknown> = {}, secrets: Record<string, string> = SECRETS): Connector => opened.open(githubConfig(fake, extra), secrets);

  const login = (connector: Connector, as: string, wantGroups = true): Promise<Identity> => {
    fake.signedIn = as;
    return roundTrip(connector, ctx(wantGroups), fake);
  };

  describe('the authorize URL', () => {
    it('goes to the Enterprise host with client_id, the callback, the state and the scopes', async () => {
      const start = await browserConnector(open()).begin('the-state', ctx());
      if (start.via !== 'redirect') throw new Error('expected a redirect');
      const url = new URL(start.url);
      expect(`${url.origin}${url.pathname}`).to.equal(`${fake.url}/login/oauth/authorize`);
      expect(Object.fromEntries(url.searchParams)).to.deep.equal({ client_id: CLIENT_ID, redirect_uri: CALLBACK, scope: 'user:email read:org', state: 'the-state' });
    });

    it('asks read:org only when orgs or teams are read', async () => {
      const scopeOf = async (extra: Record<string, unknown>, wantGroups: boolean): Promise<string | null> => {
        const start = await browserConnector(open({ orgs: undefined, ...extra })).begin('s', ctx(wantGroups));
        return start.via === 'redirect' ? new URL(start.url).searchParams.get('scope') : null;
      };
      expect(await scopeOf({}, true)).to.equal('user:email');
      expect(await scopeOf({ loadAllGroups: true }, false)).to.equal('user:email');
      expect(await scopeOf({ loadAllGroups: true }, true)).to.equal('user:email read:org');
      expect(await scopeOf({ org: 'acme' }, false)).to.equal('user:email read:org');
    });
  });

  describe('a login', () => {
    it('exchanges the code and reads the user, the verified primary email and the groups over several pages', async () => {
      const identity = await login(open(), 'alice');
      expect(identity).to.deep.include({ userId: '1001', username: 'Alice Liddell', preferredUsername: 'alice', email: 'alice@example.org', emailVerified: true });
      expect(identity.groups).to.have.members(ALICE_GROUPS);
      expect(fake.lastScope()).to.equal('user:email read:org');
      const paths = fake.requests.map((r) => r.path);
      expect(paths).to.include('/api/v3/user/teams?per_page=2&page=3');
      expect(paths).to.include('/api/v3/user/orgs?per_page=2&page=2');
      expect(paths).to.include('/api/v3/user/emails?per_page=2&page=2');
    });

    it('takes the public email of /user, and the login as the name when there is no name', async () => {
      const identity = await login(open(), 'bob', false).catch((err: unknown) => err as Error);
      // bob is in no listed org: refused; without orgs he is let in.
      expect((identity as Error).message).to.equal(NOT_A_MEMBER);
      fake.requests.length = 0;
      const free = await login(open({ orgs: undefined }), 'bob', false);
      expect(free).to.deep.include({ userId: '1002', username: 'bob', preferredUsername: 'bob', email: 'bob@example.org' });
      expect(free.groups).to.deep.equal([]);
      expect(fake.requests.map((r) => r.path).filter((p) => p.startsWith('/api/v3/user/'))).to.deep.equal([]);
    });

    it('uses the login as the user id with useLoginAsID', async () => {
      expect((await login(open({ useLoginAsID: true }), 'alice')).userId).to.equal('alice');
    });

    it('names teams by name, slug or both (teamNameField), and filters by the names it uses', async () => {
      expect((await login(open({ teamNameField: 'slug', orgs: [{ name: 'acme', teams: ['platform-ops'] }] }), 'alice')).groups).to.deep.equal(['acme', 'acme:platform-ops']);
      const both = await login(open({ teamNameField: 'both', orgs: [{ name: 'acme' }] }), 'alice');
      expect(both.groups).to.have.members(['acme', 'acme:Platform Ops', 'acme:platform-ops', 'acme:Developers', 'acme:developers', 'acme:Red Team', 'acme:red-team']);
    });

    it('loads every org and org:team with loadAllGroups when groups are asked for, and none otherwise', async () => {
      const all = await login(open({ orgs: undefined, loadAllGroups: true }), 'alice');
      expect(all.groups).to.have.members(['acme', 'acme:Platform Ops', 'acme:Developers', 'acme:Red Team', 'wonder', 'wonder:Tea Party', 'other', 'other:Misc']);
      expect((await login(open({ orgs: undefined, loadAllGroups: true }), 'alice', false)).groups).to.deep.equal([]);
    });

    it('with the legacy org: its team names without the org, and a non-member refused', async () => {
      expect((await login(open({ orgs: undefined, org: 'acme' }), 'alice')).groups).to.have.members(['Platform Ops', 'Developers', 'Red Team']);
      expect((await refusal(login(open({ orgs: undefined, org: 'acme' }), 'bob'))).message).to.equal(NOT_A_MEMBER);
    });

    it('picks the verified email of preferredEmailDomain, a * matching one label', async () => {
      expect((await login(open({ preferredEmailDomain: 'old.example.org' }), 'alice')).email).to.equal('alice@old.example.org');
      expect((await login(open({ preferredEmailDomain: '*.example.net' }), 'alice')).email).to.equal('alice@eu.example.net');
      // Unverified there: the primary.
      expect((await login(open({ preferredEmailDomain: 'corp.example.com' }), 'alice')).email).to.equal('alice@example.org');
    });
  });

  describe('refusals, in words', () => {
    it('refuses a user outside the listed orgs, and one in a listed org but not a listed team', async () => {
      for (const who of ['bob', 'carol']) {
        const err = await refusal(login(open(), who));
        expect(err.message, who).to.equal(NOT_A_MEMBER);
        expect(err.code).to.equal('permission_denied');
      }
      expect(lines.some((l) => l.msg === 'github: login refused: not in the configured orgs or teams')).to.equal(true);
    });

    it('refuses a user without a verified email', async () => {
      expect((await refusal(login(open(), 'dave'))).message).to.equal(NO_VERIFIED_EMAIL);
    });

    it('refuses when the user declines at GitHub', async () => {
      fake.declining = true;
      expect((await refusal(login(open(), 'alice'))).message).to.equal(CANCELLED);
    });
  });

  describe('GitHub\'s error answers', () => {
    it('a wrong client secret: the log says to check the credentials, never the secret', async () => {
      const err = await refusal(login(open({}, { 'github.clientSecret': 'not-the-secret-7a7a7a' }), 'alice'));
      expect(err.message).to.equal('the identity source could not complete the login; the server log says why');
      expect(text.join('')).to.contain('incorrect_client_credentials: check clientID and clientSecret');
      expect(text.join('')).not.to.contain('not-the-secret-7a7a7a');
    });

    it('a code is good once', async () => {
      const connector = browserConnector(open());
      const start = await connector.begin('s1', ctx());
      if (start.via !== 'redirect') throw new Error('expected a redirect');
      const { authorizeAsBrowser } = await import('../../helpers/oauth-round-trip.js');
      const params = await authorizeAsBrowser(start.url, CALLBACK, fake.caPem);
      await connector.complete(params, undefined, ctx());
      const again = await refusal(connector.complete(params, undefined, ctx()));
      expect(again.message).to.match(/could not complete the login/);
      expect(text.join('')).to.contain('bad_verification_code');
      expect(text.join('')).not.to.contain(params.get('code') ?? 'no code');
    });

    it('a 5xx of the API or the token endpoint: unavailable, try again later', async () => {
      fake.fail('/api/v3/user/teams', 502);
      expect((await refusal(login(open(), 'alice'))).message).to.equal('the identity source is unreachable; try again later');
      fake.fail('/login/oauth/access_token', 503);
      expect((await refusal(login(open(), 'alice'))).message).to.equal('the identity source is unreachable; try again later');
      expect(text.join('')).to.contain('GET /user/teams answered HTTP 502');
    });

    it('refuses a list longer than the page bound rather than deciding on part of it', async () => {
      const err = await refusal(login(open({ orgs: [{ name: 'acme' }] }), 'erin'));
      expect(err.message).to.match(/could not complete the login/);
      expect(text.join('')).to.contain('more than 20 pages');
    });
  });

  describe('refresh', () => {
    it('reads the user and groups again with the kept token; a revoked token ends it', async () => {
      const connector = open();
      const identity = await login(connector, 'alice');
      const again = await connector.refresh?.(identity, ctx());
      expect(again?.userId).to.equal('1001');
      expect(again?.groups).to.have.members(ALICE_GROUPS);
      fake.revokeAll();
      expect(await connector.refresh?.(identity, ctx())).to.equal(null);
      expect(text.join('')).not.to.match(/gho_[0-9a-f]{24}/);
    });
  });

  describe('the certificate of the Enterprise host', () => {
    it('is trusted with the test CA as rootCA, and without it the login fails, logged naming the connector and the host', async () => {
      expect((await login(open(), 'alice')).userId).to.equal('1001');
      const err = await refusal(login(open({ rootCA: undefined }), 'alice'));
      expect(err.message).to.equal('the identity source is unreachable; try again later');
      const line = lines.find((l) => l.level === 50 && /certificate/.test(l.msg));
      expect(line?.msg).to.equal(`the certificate of ${fake.host} is not trusted: give its CA as rootCA`);
      expect(line).to.deep.include({ connector: 'github', host: fake.host });
    });
  });
});
