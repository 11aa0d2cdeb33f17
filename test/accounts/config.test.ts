import { expect } from 'chai';
import { accountProblems, parseAccounts, usernameProblem, type AccountSettings } from '../../src/accounts/config.js';
import { ProblemSink, formatProblem } from '../../src/config/problems.js';

function parse(cm: Record<string, string>, secret: Record<string, string> = {}, previous?: ReadonlyMap<string, AccountSettings>) {
  const sink = new ProblemSink();
  const accounts = parseAccounts({ cm, secret, cmSink: sink.scoped('svc-cm'), secretSink: sink.scoped('svc-secret'), ...(previous ? { previous } : {}) });
  return { accounts, problems: sink.problems.map(formatProblem) };
}

describe('accounts/config', () => {
  it('takes names of at most 32 lower-case characters', () => {
    expect(usernameProblem('a'.repeat(32))).to.equal(undefined);
    expect(usernameProblem('a'.repeat(33))).to.equal(`username '${'a'.repeat(33)}' is longer than 32 characters`);
    for (const bad of ['Alice', '-alice', 'alice-', 'al ice', 'al/ice']) expect(usernameProblem(bad), bad).to.be.a('string');
    for (const good of ['alice', 'ci.bot', 'team_a-1']) expect(usernameProblem(good), good).to.equal(undefined);
  });

  it('gives admin the login capability, and none when admin.enabled is false', () => {
    expect(parse({}).accounts.get('admin')?.capabilities).to.deep.equal(['login']);
    expect(parse({ 'admin.enabled': 'false' }).accounts.has('admin')).to.equal(false);
    expect(parse({ 'admin.enabled': 'no' }).problems).to.deep.equal([`svc-cm: admin.enabled: must be "true" or "false", not 'no'; admin stays off (no last good value) until this is fixed`]);
  });

  it('an unreadable admin.enabled keeps the last good admin: present if it was enabled, absent if not or on first load', () => {
    const problem = `svc-cm: admin.enabled: must be "true" or "false", not 'flase'`;
    const enabled = parse({}, { 'admin.password': 'x' }).accounts;
    const kept = parse({ 'admin.enabled': 'flase' }, { 'admin.password': 'x' }, enabled);
    // The log line says which value stays in force: here the more open one, so /readyz fails too.
    expect(kept.problems).to.deep.equal([`${problem}; admin stays enabled (its last good value) until this is fixed`]);
    expect(kept.accounts.get('admin')).to.deep.equal(enabled.get('admin'));
    const disabled = parse({ 'admin.enabled': 'false' }).accounts;
    const stillOff = parse({ 'admin.enabled': 'flase' }, {}, disabled);
    expect(stillOff.problems).to.deep.equal([`${problem}; admin stays off (no last good value) until this is fixed`]);
    expect(stillOff.accounts.has('admin')).to.equal(false);
    expect(parse({ 'admin.enabled': 'flase' }).accounts.has('admin')).to.equal(false);
  });

  it('accountProblems: what would make the settings refuse one account, from svc-cm and svc-secret', () => {
    expect(accountProblems('ci', { 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': '[{"id":"a","iat":1}]' })).to.deep.equal([]);
    const problems = accountProblems('ci', { 'accounts.ci': 'apiKey', 'accounts.ci.enabled': 'yes' }, {
      'accounts.ci.tokens': '[{"id":"a","iat":1},null]',
      'accounts.ci.passwordMtime': 'soon',
    });
    expect(problems.map(formatProblem)).to.deep.equal([
      `svc-cm: accounts.ci.enabled: must be "true" or "false", not 'yes'`,
      "svc-secret: accounts.ci.passwordMtime: 'soon' is not a timestamp",
      'svc-secret: accounts.ci.tokens[1]: must be {id: string, jti?: string, iat: number, exp?: number}',
    ]);
    expect(accountProblems('admin', {}, { 'admin.passwordMtime': 'x' }).map(formatProblem)).to.deep.equal(["svc-secret: admin.passwordMtime: 'x' is not a timestamp"]);
  });

  it('disables admin with accounts.admin.enabled "false", with or without an accounts.admin key', () => {
    const withCaps = parse({ 'accounts.admin': 'login, apiKey', 'accounts.admin.enabled': 'false' }, { 'admin.password': 'x' });
    expect(withCaps.problems).to.deep.equal([]);
    expect(withCaps.accounts.get('admin')).to.deep.include({ enabled: false, capabilities: ['login', 'apiKey'] });
    const alone = parse({ 'accounts.admin.enabled': 'false' }, { 'admin.password': 'x' });
    expect(alone.problems).to.deep.equal([]);
    expect(alone.accounts.get('admin')).to.deep.include({ enabled: false, capabilities: ['login'] });
    expect(parse({ 'accounts.admin.enabled': 'true' }).accounts.get('admin')?.enabled).to.equal(true);
    expect(parse({ 'accounts.admin.enabled': 'false', 'admin.enabled': 'false' }).accounts.has('admin')).to.equal(false);
    expect(parse({ 'accounts.admin.enabled': 'off' }).problems).to.deep.equal([`svc-cm: accounts.admin.enabled: must be "true" or "false", not 'off'; admin stays off (no last good value) until this is fixed`]);
    const ci = parse({ 'accounts.ci': 'login' }, { 'accounts.ci.password': 'x' }).accounts;
    expect(parse({ 'accounts.ci': 'login', 'accounts.ci.enabled': 'no' }, { 'accounts.ci.password': 'x' }, ci).problems).to.deep.equal([
      `svc-cm: accounts.ci.enabled: must be "true" or "false", not 'no'; account 'ci' stays enabled (its last good value) until this is fixed`,
    ]);
  });

  it('reads token records with and without the random jti', () => {
    const { accounts, problems } = parse(
      { 'accounts.ci': 'apiKey' },
      { 'accounts.ci.tokens': '[{"id":"old","iat":1},{"id":"new","jti":"7f1c","iat":2,"exp":9}]' },
    );
    expect(problems).to.deep.equal([]);
    expect(accounts.get('ci')?.tokens).to.deep.equal([{ id: 'old', iat: 1 }, { id: 'new', jti: '7f1c', iat: 2, exp: 9 }]);
    expect(parse({ 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': '[{"id":"a","jti":5,"iat":1}]' }).problems).to.deep.equal([
      'svc-secret: accounts.ci.tokens[0]: must be {id: string, jti?: string, iat: number, exp?: number}',
    ]);
  });

  it('reports an unknown capability and an enabled flag without an account', () => {
    const { accounts, problems } = parse({ 'accounts.alice': 'apiKey, admin', 'accounts.bob.enabled': 'true' });
    expect(accounts.has('alice')).to.equal(false);
    expect(problems).to.deep.equal([
      "svc-cm: accounts.bob.enabled: account 'bob' has no capabilities key accounts.bob",
      "svc-cm: accounts.alice: unknown capability 'admin' (want apiKey, login)",
    ]);
  });

  it('keeps the last good version of an account whose tokens no longer parse, with only the tokens still in the text', () => {
    const first = parse({ 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': '[{"id":"a","iat":1},{"id":"b","iat":2}]' }).accounts;
    const { accounts, problems } = parse({ 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': '[{"id":"a","iat":1},{"id":1}]' }, first);
    expect(problems).to.deep.equal(['svc-secret: accounts.ci.tokens[1]: must be {id: string, jti?: string, iat: number, exp?: number}']);
    expect(accounts.get('ci')?.tokens).to.deep.equal([{ id: 'a', iat: 1 }]);
  });

  it('a leaked token removed by hand from a list left unparsable stops at once', () => {
    const leaked = '{"id":"ci","jti":"1111-leaked","iat":1}';
    const kept = '{"id":"deploy","jti":"2222-kept","iat":2}';
    const first = parse({ 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': `[${leaked},${kept}]` }).accounts;
    const { accounts, problems } = parse({ 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': `[${kept},]` }, first);
    expect(problems).to.deep.equal(['svc-secret: accounts.ci.tokens: is not JSON']);
    expect(accounts.get('ci')?.tokens).to.deep.equal([{ id: 'deploy', jti: '2222-kept', iat: 2 }]);
    expect(parse({ 'accounts.ci': 'apiKey' }, { 'accounts.ci.tokens': '[{"id":"x",' }, first).accounts.get('ci')?.tokens).to.deep.equal([]);
  });

  it('a bad change never keeps access it takes away: enabled "false" beside a typo in the capabilities', () => {
    const secret = { 'accounts.bob.password': '$2b$10$x' };
    const first = parse({ 'accounts.bob': 'login, apiKey' }, secret).accounts;
    const { accounts, problems } = parse({ 'accounts.bob': 'login, apikey', 'accounts.bob.enabled': 'false' }, secret, first);
    expect(problems).to.deep.equal(["svc-cm: accounts.bob: unknown capability 'apikey' (want apiKey, login)"]);
    expect(accounts.get('bob')).to.deep.equal({ name: 'bob', enabled: false, capabilities: ['login'], tokens: [], passwordHash: '$2b$10$x' });
    // Nor does it grant what the old text did not: enabling again beside a typo stays disabled.
    const again = parse({ 'accounts.bob': 'login, apikey', 'accounts.bob.enabled': 'true' }, secret, accounts).accounts;
    expect(again.get('bob')?.enabled).to.equal(false);
  });

  it('the admin path too: accounts.admin.enabled "false" beside a typo, or beside an unreadable admin.enabled', () => {
    const first = parse({ 'accounts.admin': 'login' }, { 'admin.password': 'h' }).accounts;
    const typo = parse({ 'accounts.admin': 'login, apikey', 'accounts.admin.enabled': 'false' }, { 'admin.password': 'h' }, first);
    expect(typo.problems).to.have.length(1);
    expect(typo.accounts.get('admin')?.enabled).to.equal(false);
    const flase = parse({ 'admin.enabled': 'flase', 'accounts.admin.enabled': 'false' }, { 'admin.password': 'h' }, first);
    expect(flase.accounts.get('admin')?.enabled).to.equal(false);
  });

  it('a changed password hash beside a problem leaves no password in force, and the later change time', () => {
    const first = parse({ 'accounts.alice': 'login' }, { 'accounts.alice.password': 'old', 'accounts.alice.passwordMtime': '2026-01-01T00:00:00Z' }).accounts;
    const changed = parse({ 'accounts.alice': 'login, typo' }, { 'accounts.alice.password': 'new', 'accounts.alice.passwordMtime': '2026-02-01T00:00:00Z' }, first).accounts.get('alice');
    expect(changed).to.deep.equal({ name: 'alice', enabled: true, capabilities: ['login'], tokens: [], passwordMtime: new Date('2026-02-01T00:00:00Z') });
  });

  it('reads password hash, change time and enabled flag', () => {
    const { accounts, problems } = parse(
      { 'accounts.alice': 'login', 'accounts.alice.enabled': 'false' },
      { 'accounts.alice.password': '$2b$10$x', 'accounts.alice.passwordMtime': '2026-05-01T10:00:00Z' },
    );
    expect(problems).to.deep.equal([]);
    expect(accounts.get('alice')).to.deep.equal({
      name: 'alice', enabled: false, capabilities: ['login'], tokens: [], passwordHash: '$2b$10$x', passwordMtime: new Date('2026-05-01T10:00:00Z'),
    });
  });

  it('reads sessionsNotBefore (admin. for admin, accounts.<name>. otherwise) and the second factor under mfa.<name>.', () => {
    const { accounts, problems } = parse({ 'accounts.alice': 'login' }, {
      'admin.sessionsNotBefore': '2026-05-01T10:00:00Z',
      'accounts.alice.sessionsNotBefore': '2026-05-02T10:00:00Z',
      'mfa.alice.totp': 'sealed',
      'mfa.alice.recoveryCodes': '["h1","h2"]',
      'mfa.alice.passkeys': '[{"id":"c1","name":"laptop","publicKey":"pk","counter":0,"createdAt":5}]',
    });
    expect(problems).to.deep.equal([]);
    expect(accounts.get('admin')?.sessionsNotBefore).to.deep.equal(new Date('2026-05-01T10:00:00Z'));
    expect(accounts.get('alice')?.sessionsNotBefore).to.deep.equal(new Date('2026-05-02T10:00:00Z'));
    expect(accounts.get('alice')?.secondFactor).to.deep.equal({ totpSealed: 'sealed', recoveryHashes: ['h1', 'h2'], passkeys: [{ id: 'c1', name: 'laptop', publicKey: 'pk', counter: 0, createdAt: 5 }] });
    expect(accounts.get('admin')).not.to.have.property('secondFactor');
  });

  it('an unreadable sessionsNotBefore or second-factor key names the key, and the kept account keeps its factor and the later cut-off', () => {
    const good = parse({ 'accounts.alice': 'login' }, { 'mfa.alice.totp': 'sealed', 'accounts.alice.sessionsNotBefore': '2026-05-02T10:00:00Z' }).accounts;
    const bad = parse({ 'accounts.alice': 'login' }, { 'mfa.alice.recoveryCodes': '{"h1"', 'accounts.alice.sessionsNotBefore': 'soon' }, good);
    expect(bad.problems).to.deep.equal([
      "svc-secret: accounts.alice.sessionsNotBefore: 'soon' is not a timestamp",
      'svc-secret: mfa.alice.recoveryCodes: is not JSON (want a JSON list of strings)',
    ]);
    expect(bad.accounts.get('alice')?.secondFactor?.totpSealed).to.equal('sealed');
    expect(bad.accounts.get('alice')?.sessionsNotBefore).to.deep.equal(new Date('2026-05-02T10:00:00Z'));
    // First load: nothing to keep, so the account stays out (no login without its factor).
    expect(parse({ 'accounts.alice': 'login' }, { 'mfa.alice.passkeys': '[{"id":1}]' }).accounts.has('alice')).to.equal(false);
  });
});
