/**
 * The Microsoft Entra ID connector against the local Entra stand-in (test/helpers/fake-entra.ts)
 * over HTTPS, through the real upstream fetch with the stand-in's CA as rootCA: the authorize
 * request, the identity, groups in the token (ids and names), the overage through Graph (paged),
 * the `groups` filter, onlySecurityGroups, Graph failing or throttling past the bound, and the
 * ID token's tenant (tid and iss) for a tenant id, a domain, organizations and common.
 */
import { expect } from 'chai';
import type { Connector, Identity, LoginContext } from '../../../connectors/connector.js';
import { microsoft } from '../../../connectors/microsoft/index.js';
import { GROUPS_UNREADABLE, NOT_CONFIRMED, NOT_IN_GROUPS } from '../../../connectors/microsoft/microsoft.js';
import { CONSUMERS_TENANT } from '../../../connectors/microsoft/tenant.js';
import { startFakeEntra, type FakeEntra } from '../../helpers/fake-entra.js';
import { browserConnector, roundTrip } from '../../helpers/oauth-round-trip.js';
import { refusal, upstreamConnectors } from '../connector-suite.js';
import { ALICE, BOB, CALLBACK, CLIENT_ID, COFFEE, DEV, DOMAIN, entraOptions, FOREIGN_OPS, GUEST, MALLORY, MANY, MANYGROUPS, microsoftConfig, OPS, OTHER, OTHER_TENANT_ID, SECRETS, TENANT_ID } from './fixture.js';

const GET_MEMBER_OBJECTS = '/v1.0/me/getMemberObjects';
const GET_BY_IDS = '/v1.0/directoryObjects/getByIds';
const ALL_250 = [OPS, DEV, COFFEE, OTHER, ...MANY];

describe('the Microsoft Entra ID connector (against a local Entra stand-in)', function () {
  this.timeout(20_000);
  let fake: FakeEntra;
  const opened = upstreamConnectors(microsoft, 'entra');
  const { lines, text } = opened;

  before(async () => {
    fake = await startFakeEntra(entraOptions(CALLBACK));
  });
  after(async () => {
    await opened.close();
    await fake?.close();
  });
  beforeEach(() => {
    opened.clear();
    fake.clearFailures();
    fake.graphCalls.clear();
    fake.tamper = undefined;
    fake.declining = false;
  });

  const ctx = (): LoginContext => ({ callbackUrl: CALLBACK, wantGroups: true, signal: AbortSignal.timeout(15_000) });
  const open = (extra: Record<string, unknown> = {}): Connector => opened.open(microsoftConfig(fake, extra), SECRETS);
  const login = (connector: Connector, upn: string): Promise<Identity> => {
    fake.signedIn = upn;
    return roundTrip(connector, ctx(), fake);
  };
  const graphCalls = (): Record<string, number> => Object.fromEntries(fake.graphCalls);

  it('sends the browser to the tenant\'s v2.0 authorize endpoint with PKCE, a nonce and Graph\'s delegated scopes', async () => {
    const start = await browserConnector(open()).begin('the-state', ctx());
    if (start.via !== 'redirect') throw new Error('expected a redirect');
    const url = new URL(start.url);
    expect(`${url.origin}${url.pathname}`).to.equal(`${fake.url}/${TENANT_ID}/oauth2/v2.0/authorize`);
    const q = Object.fromEntries(url.searchParams);
    expect(q).to.include({ client_id: CLIENT_ID, redirect_uri: CALLBACK, response_type: 'code', state: 'the-state', code_challenge_method: 'S256' });
    expect(q['scope']).to.equal(`openid profile email ${fake.url}/User.Read ${fake.url}/GroupMember.Read.All`);
    expect(q['nonce']).to.match(/^[\w-]{20,}$/);
    expect(q['code_challenge']).to.match(/^[\w-]{43}$/);
  });

  it('logs in a user with 3 groups in the token: their ids, without asking Graph, and the identity from the ID token', async () => {
    const identity = await login(open(), ALICE.upn);
    expect(identity).to.deep.include({ userId: ALICE.oid, username: 'Alice Liddell', preferredUsername: ALICE.upn, email: ALICE.email, emailVerified: false });
    expect(identity.groups).to.have.members([OPS.id, DEV.id, COFFEE.id]).and.have.length(3);
    expect(graphCalls()).to.deep.equal({});
    expect(identity.claims).to.deep.include({ tid: TENANT_ID, oid: ALICE.oid, preferred_username: ALICE.upn });
  });

  it('gives the groups\' display names with groupNameFormat: name (one getByIds)', async () => {
    const identity = await login(open({ groupNameFormat: 'name' }), ALICE.upn);
    expect(identity.groups).to.have.members(['ops', 'dev', 'coffee lovers']).and.have.length(3);
    expect(graphCalls()).to.deep.equal({ [GET_BY_IDS]: 1 });
  });

  it('keeps only the groups listed in `groups`, and refuses a user in none of them', async () => {
    expect((await login(open({ groupNameFormat: 'name', groups: ['ops', 'coffee lovers', 'absent'] }), ALICE.upn)).groups).to.have.members(['ops', 'coffee lovers']).and.have.length(2);
    expect((await login(open({ groups: [DEV.id] }), ALICE.upn)).groups).to.deep.equal([DEV.id]);
    const err = await refusal(login(open({ groups: [OPS.id, DEV.id] }), BOB.upn));
    expect(err.message).to.equal(NOT_IN_GROUPS);
    expect(err.code).to.equal('permission_denied');
  });

  it('counts security groups only with onlySecurityGroups, from the token and through the overage', async () => {
    expect((await login(open({ onlySecurityGroups: true }), ALICE.upn)).groups).to.have.members([OPS.id, DEV.id]).and.have.length(2);
    const identity = await login(open({ onlySecurityGroups: true, groupNameFormat: 'name' }), MANYGROUPS.upn);
    const security = ALL_250.filter((g) => g.securityEnabled).map((g) => g.displayName);
    expect(identity.groups).to.have.members(security).and.have.length(security.length);
    expect(identity.groups).not.to.include('coffee lovers');
  });

  it('reads the 250 groups of an overage from Graph, following the pages, and resolves their names', async () => {
    const ids = await login(open(), MANYGROUPS.upn);
    expect(ids.groups).to.have.members(ALL_250.map((g) => g.id)).and.have.length(250);
    // One POST and two further pages (100 ids a page), then the ids resolved to groups once.
    expect(graphCalls()).to.deep.equal({ [GET_MEMBER_OBJECTS]: 3, [GET_BY_IDS]: 1 });
    fake.graphCalls.clear();
    const names = await login(open({ groupNameFormat: 'name', groups: ['ops', 'team-345', 'absent'] }), MANYGROUPS.upn);
    expect(names.groups).to.have.members(['ops', 'team-345']).and.have.length(2);
    // The claim rules read the groups that count, never the overage pointer.
    expect(names.claims?.['groups']).to.have.members(['ops', 'team-345']);
    expect(names.claims).not.to.have.any.keys('_claim_names', '_claim_sources');
  });

  it('refuses the login, in words, when Graph answers 500 on the overage or on names', async () => {
    fake.fail(GET_MEMBER_OBJECTS, 500);
    const err = await refusal(login(open(), MANYGROUPS.upn));
    expect(err.message).to.equal(GROUPS_UNREADABLE);
    expect(lines.find((l) => l.msg.includes('groups could not be read'))).to.deep.include({ reason: 'POST /v1.0/me/getMemberObjects answered HTTP 500' });
    fake.fail(GET_BY_IDS, 503);
    expect((await refusal(login(open({ groupNameFormat: 'name' }), ALICE.upn))).message).to.equal(GROUPS_UNREADABLE);
  });

  it('waits out a 429 within the bound and goes on; refuses when Retry-After is past it or throttling does not end', async () => {
    fake.fail(GET_MEMBER_OBJECTS, 429, 1, { 'retry-after': '1' });
    const started = Date.now();
    expect((await login(open(), MANYGROUPS.upn)).groups).to.have.length(250);
    expect(Date.now() - started).to.be.at.least(1_000);
    expect(lines.some((l) => l.msg.includes('waiting as Retry-After says'))).to.equal(true);

    opened.clear();
    fake.fail(GET_MEMBER_OBJECTS, 429, 1, { 'retry-after': '120' });
    const quick = Date.now();
    expect((await refusal(login(open(), MANYGROUPS.upn))).message).to.equal(GROUPS_UNREADABLE);
    expect(Date.now() - quick, 'refused at once, not after 120 s').to.be.below(5_000);
    expect(String((lines.find((l) => l.msg.includes('groups could not be read')) as { reason?: string } | undefined)?.reason)).to.match(/throttled \(HTTP 429, Retry-After 120\) past the bound/);

    fake.graphCalls.clear();
    fake.fail(GET_BY_IDS, 429, 10, { 'retry-after': '0' });
    expect((await refusal(login(open({ groupNameFormat: 'name' }), ALICE.upn))).message).to.equal(GROUPS_UNREADABLE);
    expect(fake.graphCalls.get(GET_BY_IDS)).to.equal(4); // the first try and 3 waits
  });

  it('refuses the login when Graph refuses the access token (no admin consent), naming the permission in the log', async () => {
    fake.fail(GET_BY_IDS, 403);
    expect((await refusal(login(open({ groupNameFormat: 'name' }), ALICE.upn))).message).to.equal(GROUPS_UNREADABLE);
    expect(text.join('')).to.include('GroupMember.Read.All');
  });

  describe('the ID token\'s tenant', () => {
    it('refuses a token of another tenant, or whose iss does not match its tid, for a tenant id or domain', async () => {
      for (const tenant of [TENANT_ID, DOMAIN]) {
        fake.tamper = (c) => ({ ...c, tid: OTHER_TENANT_ID, iss: `${fake.url}/${OTHER_TENANT_ID}/v2.0` });
        expect((await refusal(login(open({ tenant }), ALICE.upn))).message, tenant).to.equal(NOT_CONFIRMED);
        fake.tamper = (c) => ({ ...c, iss: `https://login.example.net/${TENANT_ID}/v2.0` });
        expect((await refusal(login(open({ tenant }), ALICE.upn))).message, tenant).to.equal(NOT_CONFIRMED);
        fake.tamper = undefined;
        expect((await login(open({ tenant }), ALICE.upn)).userId, tenant).to.equal(ALICE.oid);
      }
      expect(text.join('')).to.include(`the ID token comes from tenant ${OTHER_TENANT_ID}`);
      // A user of another tenant, signed in by the stand-in there: refused under the tenant id.
      expect((await refusal(login(open(), GUEST.upn))).message).to.equal(NOT_CONFIRMED);
    });

    it('takes any tenant under organizations and common, its iss checked against its own tid; never personal accounts under organizations', async () => {
      for (const tenant of ['organizations', 'common']) {
        expect((await login(open({ tenant }), GUEST.upn)).userId, tenant).to.equal(GUEST.oid);
        fake.tamper = (c) => ({ ...c, iss: `${fake.url}/${TENANT_ID}/v2.0` }); // tid is the guest's tenant
        expect((await refusal(login(open({ tenant }), GUEST.upn))).message, tenant).to.equal(NOT_CONFIRMED);
        fake.tamper = (c) => ({ ...c, tid: undefined });
        expect((await refusal(login(open({ tenant }), GUEST.upn))).message, tenant).to.equal(NOT_CONFIRMED);
        fake.tamper = undefined;
      }
      fake.tamper = (c) => ({ ...c, tid: CONSUMERS_TENANT, iss: `${fake.url}/${CONSUMERS_TENANT}/v2.0` });
      expect((await refusal(login(open({ tenant: 'organizations' }), GUEST.upn))).message).to.equal(NOT_CONFIRMED);
      expect((await login(open({ tenant: 'common' }), GUEST.upn)).userId).to.equal(GUEST.oid);
    });

    it('lets no other tenant\'s group count under common or organizations: names are refused, a foreign group never has one of our ids', async () => {
      for (const tenant of ['common', 'organizations']) {
        // The review's repro: another tenant's admin makes a security group "ops"; with names it would have counted.
        expect(() => open({ tenant, groupNameFormat: 'name', onlySecurityGroups: true, groups: ['ops'] }), tenant).to.throw(/groupNameFormat: cannot be name with tenant/);
        expect((await refusal(login(open({ tenant, onlySecurityGroups: true, groups: [OPS.id] }), MALLORY.upn))).message, tenant).to.equal(NOT_IN_GROUPS);
        expect((await login(open({ tenant, groups: [FOREIGN_OPS.id] }), MALLORY.upn)).groups, tenant).to.deep.equal([FOREIGN_OPS.id]);
      }
    });

    it('warns at start about who may log in under common, and about display names under a single tenant, with onlySecurityGroups too', () => {
      open({ tenant: 'common' });
      open({ groupNameFormat: 'name', onlySecurityGroups: true });
      open({ groupNameFormat: 'name' });
      const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
      expect(warnings).to.have.length(3);
      expect(warnings[0]).to.equal('microsoft: tenant common: users of any Entra tenant, and personal Microsoft accounts, can log in; restrict them with groups (object ids) or a claim rule on tid');
      expect(warnings[1]).to.equal('microsoft: groupNameFormat name: a group counts by its display name, which is not unique and which any user allowed to create groups in the tenant can give a new group (Entra lets every user create security groups unless the tenant turns that off); prefer id');
      expect(warnings[2]).to.include('security groups and Microsoft 365 groups unless');
    });

    it('refuses a token whose nonce or audience is not this login\'s', async () => {
      fake.tamper = (c) => ({ ...c, nonce: 'another' });
      expect((await refusal(login(open(), ALICE.upn))).message).to.equal(NOT_CONFIRMED);
      fake.tamper = (c) => ({ ...c, aud: 'another-app' });
      expect((await refusal(login(open(), ALICE.upn))).message).to.equal(NOT_CONFIRMED);
    });
  });

  it('never follows the overage pointer in the token: Graph is graphURL\'s', async () => {
    fake.tamper = (c) => (c['_claim_sources'] === undefined ? c : { ...c, _claim_sources: { src1: { endpoint: 'https://graph.evil.example/steal' } } });
    expect((await login(open(), MANYGROUPS.upn)).groups).to.have.length(250);
    expect(fake.graphCalls.get(GET_MEMBER_OBJECTS)).to.equal(3);
  });
});
