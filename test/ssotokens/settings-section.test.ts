/** svc-cm users.ssoTokens.maxLifetime and users.sso.groupsRecheck, and svc-secret's ssotokens.* records. */
import { expect } from 'chai';
import { formatProblem } from '../../src/config/problems.js';
import type { ConfigMapObject, StoreSnapshot } from '../../src/config/manifests.js';
import { parseSettings } from '../../src/main/settings.js';
import { recordKeyOf, serializeUser } from '../../src/ssotokens/records.js';
import { DEFAULT_GROUPS_RECHECK_MS, DEFAULT_MAX_LIFETIME_MS } from '../../src/ssotokens/settings-section.js';

function snapshot(cm: Record<string, string>, secret: Record<string, string> = {}): StoreSnapshot {
  const configMaps = new Map<string, ConfigMapObject>([['svc-cm', { name: 'svc-cm', file: 'cm.yaml', data: cm }]]);
  return { configMaps, secrets: new Map([['svc-secret', { name: 'svc-secret', file: 's.yaml', labels: {}, data: { 'server.secretkey': 'k', ...secret } }]]), applications: [] };
}

function parse(cm: Record<string, string>, secret: Record<string, string> = {}, previous?: ReturnType<typeof parseSettings>['settings']) {
  const { settings, problems } = parseSettings(snapshot(cm, secret), previous);
  return { settings, problems: problems.map(formatProblem) };
}

const BOB = { sub: 'CgNib2ISBGNvcnA', name: 'bob', connectorId: 'corp', identity: 'sealed', tokens: [{ id: 'i1', name: 'ci', jti: 'j1', iat: 1, exp: 2, groups: ['devs'] }] };

describe('svc-cm users.ssoTokens.maxLifetime and users.sso.groupsRecheck', function () {
  it('default to 2160h and 5m', function () {
    expect(DEFAULT_MAX_LIFETIME_MS).to.equal(2160 * 3_600_000);
    expect(DEFAULT_GROUPS_RECHECK_MS).to.equal(300_000);
    expect(parse({})).to.deep.include({ problems: [] });
    expect(parse({}).settings.ssoTokenLimits).to.deep.equal({ maxLifetimeMs: DEFAULT_MAX_LIFETIME_MS, groupsRecheckMs: DEFAULT_GROUPS_RECHECK_MS });
  });

  it('take durations', function () {
    const { settings, problems } = parse({ 'users.ssoTokens.maxLifetime': '720h', 'users.sso.groupsRecheck': '30s' });
    expect(problems).to.deep.equal([]);
    expect(settings.ssoTokenLimits).to.deep.equal({ maxLifetimeMs: 720 * 3_600_000, groupsRecheckMs: 30_000 });
  });

  it('name the key and the value of a bad one, and keep the value in force', function () {
    const good = parse({ 'users.ssoTokens.maxLifetime': '24h', 'users.sso.groupsRecheck': '1m' }).settings;
    const bad = parse({ 'users.ssoTokens.maxLifetime': 'forever', 'users.sso.groupsRecheck': '10ms' }, {}, good);
    expect(bad.problems).to.deep.equal([
      "svc-cm: users.ssoTokens.maxLifetime: 'forever' is not a duration (for example 2160h, 5m); the previous value stays in force (at start: '2160h')",
      "svc-cm: users.sso.groupsRecheck: '10ms' is shorter than 1s; the previous value stays in force (at start: '5m')",
    ]);
    expect(bad.settings.ssoTokenLimits).to.deep.equal({ maxLifetimeMs: 24 * 3_600_000, groupsRecheckMs: 60_000 });
    expect(parse({ 'users.sso.groupsRecheck': 'often' }).settings.ssoTokenLimits.groupsRecheckMs).to.equal(DEFAULT_GROUPS_RECHECK_MS);
  });
});

describe('svc-secret ssotokens.* records', function () {
  it('reads one user per key, tokens indexed by jti', function () {
    const { settings, problems } = parse({}, { [recordKeyOf(BOB.sub)]: serializeUser(BOB) });
    expect(problems).to.deep.equal([]);
    const user = settings.ssoTokens.get(recordKeyOf(BOB.sub));
    expect(user?.byJti.get('j1')?.groups).to.deep.equal(['devs']);
  });

  it('leaves out, with the reason, a record that is not JSON, misses a field, or sits under another user\'s key', function () {
    const other = recordKeyOf('someone-else');
    const { settings, problems } = parse({}, {
      [recordKeyOf('a')]: '{',
      [recordKeyOf('b')]: JSON.stringify({ ...BOB, sub: 'b', tokens: [{ id: 'x' }] }),
      [other]: serializeUser(BOB),
    });
    expect(settings.ssoTokens.size).to.equal(0);
    expect(problems).to.deep.equal([
      `svc-secret: ${recordKeyOf('a')}: is not JSON; the personal API tokens it held do not work until it is fixed or deleted`,
      `svc-secret: ${recordKeyOf('b')}: is not a personal API token record {sub, name, connectorId, identity, tokens: [{id, name, jti, iat, exp, groups}]}; its tokens do not work until it is fixed or deleted`,
      `svc-secret: ${other}: holds the record of another user (the key is not the hash of its 'sub'); its tokens do not work`,
    ]);
  });
});
