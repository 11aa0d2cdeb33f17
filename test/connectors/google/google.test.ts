/**
 * The Google connector against the local Google stand-in (test/helpers/fake-google.ts) over
 * HTTPS, through the real upstream fetch with the stand-in's CA as rootCA: the authorize URL
 * (hd, PKCE, offline), the hosted domain held to `hostedDomains`, the groups read from the
 * Directory API through the service account's JWT grant (the token kept for its lifetime),
 * paging, the transitive walk (a cycle included), the `groups` filter, and a Directory API or
 * a grant that fails refusing the login in words.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { Connector, Identity, LoginContext } from '../../../connectors/connector.js';
import { GROUPS_UNAVAILABLE } from '../../../connectors/google/access-token.js';
import { CANCELLED, EMAIL_NOT_VERIFIED, NOT_IN_DOMAIN, NOT_IN_GROUPS } from '../../../connectors/google/google.js';
import { google } from '../../../connectors/google/index.js';
import { upstreamFetches } from '../../../src/idp/connectors/upstream-fetch.js';
import { startFakeGoogle, type FakeGoogle } from '../../helpers/fake-google.js';
import { browserConnector, roundTrip } from '../../helpers/oauth-round-trip.js';
import { openThroughType, refusal, upstreamConnectors } from '../connector-suite.js';
import { ADMIN, ALICE_GROUPS, ALICE_TRANSITIVE, CALLBACK, CLIENT_ID, ERIN_GROUPS, fakeOptions, googleConfig, IMPOSTOR, secrets } from './fixture.js';

describe('the Google connector (against a local Google stand-in)', function () {
  this.timeout(20_000);
  let fake: FakeGoogle;
  const opened = upstreamConnectors(google, 'google');
  const { text } = opened;

  before(async () => {
    fake = await startFakeGoogle(fakeOptions());
  });
  after(async () => {
    await opened.close();
    await fake?.close();
  });
  beforeEach(() => {
    opened.clear();
    fake.declining = false;
    fake.delegated = true;
  });

  const ctx = (wantGroups = true, offlineAccess = false): LoginContext => ({ callbackUrl: CALLBACK, wantGroups, offlineAccess, signal: AbortSignal.timeout(10_000) });
  const open = (extra: Record<string, unknown> = {}): Connector => opened.open(googleConfig(fake, extra), secrets(fake));
  const login = (connector: Connector, as: string, wantGroups = true): Promise<Identity> => {
    fake.signedIn = as;
    return roundTrip(connector, ctx(wantGroups), fake);
  };
  const grantsFor = (admin: string): number => fake.grants().get(admin) ?? 0;

  it('sends the browser to Google with the code flow, PKCE, a nonce, Dex\'s scopes and the hosted domain as hd', async () => {
    const start = await browserConnector(open()).begin('the-state', ctx());
    if (start.via !== 'redirect') throw new Error('expected a redirect');
    const q = new URL(start.url).searchParams;
    expect(`${new URL(start.url).origin}${new URL(start.url).pathname}`).to.equal(`${fake.url}/o/oauth2/v2/auth`);
    expect(Object.fromEntries(q)).to.include({ client_id: CLIENT_ID, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid profile email', state: 'the-state', code_challenge_method: 'S256', hd: 'acme.example' });
    expect(q.get('nonce')).to.have.length.greaterThan(20);
    expect(q.has('access_type')).to.equal(false);
    const two = await browserConnector(open({ hostedDomains: ['acme.example', 'other.example'], domainToAdminEmail: { '*': ADMIN } })).begin('s', ctx(true, true));
    const q2 = two.via === 'redirect' ? new URL(two.url).searchParams : new URLSearchParams();
    expect([q2.get('hd'), q2.get('access_type'), q2.get('prompt')]).to.deep.equal(['*', 'offline', 'consent']);
  });

  it('logs a user of a hosted domain in, with the groups the Directory API lists for them', async () => {
    const identity = await login(open(), 'alice@acme.example');
    expect(identity).to.deep.include({ userId: '100000000000000000001', username: 'Alice Liddell', email: 'alice@acme.example', emailVerified: true });
    expect(identity.groups).to.have.members(ALICE_GROUPS);
    expect(fake.lastAuthorize()?.get('hd')).to.equal('acme.example');
  });

  it('refuses an ID token whose hd is another domain, or that has none (a consumer account), in words', async () => {
    for (const who of ['carol@other.example', 'dave@gmail.com']) {
      const err = await refusal(login(open(), who));
      expect(err.message).to.equal(NOT_IN_DOMAIN);
      expect(err.code).to.equal('permission_denied');
    }
    // Without hostedDomains any account may log in (groups aside).
    const consumer = await login(open({ hostedDomains: undefined, serviceAccountKey: undefined, domainToAdminEmail: undefined }), 'dave@gmail.com');
    expect(consumer.userId).to.equal('100000000000000000004');
    expect(consumer.groups).to.deep.equal([]);
  });

  it('refuses an ID token whose email is not verified, in words, before asking the Directory API for that address\'s groups (as Dex)', async () => {
    // The review's repro: no hostedDomains, an admin for every domain: the unverified address would have had alice's groups.
    const anyDomain = { hostedDomains: undefined, domainToAdminEmail: { '*': ADMIN } };
    const asked = fake.directoryRequests().length;
    const err = await refusal(login(open(anyDomain), IMPOSTOR.sub));
    expect(err.message).to.equal(EMAIL_NOT_VERIFIED);
    expect(err.code).to.equal('permission_denied');
    expect(fake.directoryRequests().length).to.equal(asked);
    expect(text.join('')).to.include('google: login refused: the ID token\'s email_verified is not true');
    // Without a service account too: the email is still taken as the person's.
    expect((await refusal(login(open({ ...anyDomain, serviceAccountKey: undefined, domainToAdminEmail: undefined }), IMPOSTOR.sub))).message).to.equal(EMAIL_NOT_VERIFIED);
    // The verified owner of the address logs in with the same config.
    expect((await login(open(anyDomain), 'alice@acme.example')).groups).to.have.members(ALICE_GROUPS);
  });

  it('asks for a service-account token once and keeps it for the next logins', async () => {
    const connector = open();
    const before = grantsFor(ADMIN);
    await login(connector, 'alice@acme.example');
    await login(connector, 'bob@acme.example');
    await login(connector, 'alice@acme.example');
    expect(grantsFor(ADMIN) - before).to.equal(1);
  });

  it('asks for a new token once the kept one has reached the end of its lifetime', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const log = pino({ level: 'silent' });
    const fetches = upstreamFetches(log, false);
    const connector = openThroughType(google, googleConfig(fake), secrets(fake), log, { now: () => new Date(now), upstreamFetch: fetches.upstreamFetch });
    try {
      const before = grantsFor(ADMIN);
      await login(connector, 'alice@acme.example');
      now += 3000 * 1000;   // within Google's 3599 s, less svc's margin
      await login(connector, 'alice@acme.example');
      expect(grantsFor(ADMIN) - before).to.equal(1);
      now += 600 * 1000;    // past it
      await login(connector, 'alice@acme.example');
      expect(grantsFor(ADMIN) - before).to.equal(2);
    } finally {
      await fetches.close();
    }
  });

  it('follows pageToken through every page of groups', async () => {
    const requestsBefore = fake.directoryRequests().length;
    const identity = await login(open(), 'erin@acme.example');
    expect(identity.groups).to.have.members(ERIN_GROUPS);
    expect(fake.directoryRequests().slice(requestsBefore)).to.deep.equal(['erin@acme.example', 'erin@acme.example', 'erin@acme.example']);
  });

  it('with fetchTransitiveGroupMembership, adds the groups of the groups, each asked for once though they form a cycle', async () => {
    const requestsBefore = fake.directoryRequests().length;
    const identity = await login(open({ fetchTransitiveGroupMembership: true }), 'alice@acme.example');
    expect(identity.groups).to.have.members(ALICE_TRANSITIVE);
    const asked = fake.directoryRequests().slice(requestsBefore);
    expect([...asked].sort()).to.deep.equal(['alice@acme.example', 'all@acme.example', 'dev@acme.example', 'eng@acme.example', 'ops@acme.example']);
  });

  it('keeps only the groups `groups` lists, and refuses a user in none of them', async () => {
    const connector = open({ groups: ['dev@acme.example', 'nobody@acme.example'] });
    expect((await login(connector, 'alice@acme.example')).groups).to.deep.equal(['dev@acme.example']);
    const err = await refusal(login(connector, 'bob@acme.example'));
    expect(err.message).to.equal(NOT_IN_GROUPS);
    expect(err.code).to.equal('permission_denied');
    // The filter holds even when the client did not ask for groups.
    expect(await refusal(login(connector, 'bob@acme.example', false))).to.have.property('message', NOT_IN_GROUPS);
  });

  it('reads the groups at every login, asked for or not, and hands the claim rules the ID token\'s claims with the groups as fetched', async () => {
    const requestsBefore = fake.directoryRequests().length;
    const identity = await login(open({ groups: ['dev@acme.example'] }), 'alice@acme.example', false);
    expect(fake.directoryRequests().length).to.equal(requestsBefore + 1);
    expect(identity.groups).to.deep.equal(['dev@acme.example']);
    expect(identity.claims).to.deep.include({ sub: '100000000000000000001', email: 'alice@acme.example', hd: 'acme.example', email_verified: true });
    expect(identity.claims?.['groups']).to.have.members(ALICE_GROUPS);
    // Without a service account there are no groups to give: `groups` is absent, not an empty list.
    const plain = await login(open({ serviceAccountKey: undefined, domainToAdminEmail: undefined }), 'alice@acme.example');
    expect(plain.groups).to.deep.equal([]);
    expect(plain.claims).to.include({ hd: 'acme.example' }).and.not.to.have.property('groups');
  });

  it('refuses the login in words when the Directory API fails, rather than log the user in without groups', async () => {
    const connector = open();
    fake.fail('/admin/directory/v1/groups', 503);
    const err = await refusal(login(connector, 'alice@acme.example'));
    expect(err.message).to.equal(GROUPS_UNAVAILABLE);
    expect(text.join('')).to.contain('answered HTTP 503: Backend Error');
  });

  it('refuses the login in words when the service account may not act as the admin (no domain-wide delegation)', async () => {
    fake.delegated = false;
    const err = await refusal(login(open(), 'alice@acme.example'));
    expect(err.message).to.equal(GROUPS_UNAVAILABLE);
    expect(text.join('')).to.contain('unauthorized_client');
    expect(text.join('')).to.contain('domain-wide delegation');
  });

  it('drops a token the API refuses and asks for a new one', async () => {
    const connector = open();
    await login(connector, 'alice@acme.example');
    const before = grantsFor(ADMIN);
    fake.revokeServiceTokens();
    expect((await login(connector, 'alice@acme.example')).groups).to.have.members(ALICE_GROUPS);
    expect(grantsFor(ADMIN) - before).to.equal(1);
  });

  it('refuses a user whose domain has no administrator in domainToAdminEmail', async () => {
    const err = await refusal(login(open({ hostedDomains: undefined }), 'carol@other.example'));
    expect(err.message).to.equal(GROUPS_UNAVAILABLE);
    expect(text.join('')).to.contain('names no administrator for the domain of carol@other.example');
  });

  it('refuses a user who declines at Google, in words', async () => {
    fake.declining = true;
    expect(await refusal(login(open(), 'alice@acme.example'))).to.have.property('message', CANCELLED);
  });

  it('refreshes through Google\'s refresh token, reading hd and the groups again', async () => {
    const connector = browserConnector(open());
    fake.signedIn = 'alice@acme.example';
    const identity = await roundTrip(connector, ctx(true, true), fake);
    expect(identity.connectorData).to.be.a('string');
    const refreshed = await connector.refresh?.(identity, ctx());
    expect(refreshed?.userId).to.equal(identity.userId);
    expect(refreshed?.groups).to.have.members(ALICE_GROUPS);
    expect(await connector.refresh?.({ ...identity, connectorData: JSON.stringify({ refreshToken: 'revoked', sub: identity.userId }) }, ctx())).to.equal(null);
  });

  it('never logs the client secret or the service account\'s key', async () => {
    await login(open(), 'alice@acme.example');
    const key = (JSON.parse(fake.keyFile) as { private_key: string }).private_key;
    const all = text.join('');
    expect(all).not.to.contain('GOCSPX');
    expect(all).not.to.contain(key.split('\n')[1]);
  });
});
