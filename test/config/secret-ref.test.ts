/**
 * Secret references in configuration values (src/config/secret-ref.ts): `$<key>` reads
 * svc-secret, `$<secret>:<key>` reads another Secret only when it carries the label
 * app.kubernetes.io/part-of: svc, so a Secret of another application in the same namespace
 * (Argo CD's own, labelled part-of: argocd) is never read into svc's configuration; and never a
 * key svc keeps for itself (src/config/own-secrets.ts), so that editing a ConfigMap is never a
 * way to read them.
 */
import { expect } from 'chai';
import { INITIAL_ADMIN_SECRET, PART_OF_LABEL, PART_OF_VALUE, SETTINGS_SECRET, type SecretObject } from '../../src/config/manifests.js';
import { ProblemSink, formatProblem } from '../../src/config/problems.js';
import { isFromSecret, isSecretReference, resolveAllReferences, resolveForChecking, resolveSecretReference, UNRESOLVED, type SecretLookup } from '../../src/config/secret-ref.js';
import { parseExtensionConfig } from '../../src/extensions/config.js';
import { parseWorkloadConfig } from '../../src/workload/config.js';

const secret = (name: string, labels: Record<string, string>, data: Record<string, string>): SecretObject => ({ name, file: `${name}.yaml`, labels, data });

const SECRETS: SecretLookup = new Map([
  [SETTINGS_SECRET, secret(SETTINGS_SECRET, {}, {
    'oidc.clientSecret': 's3cret', 'server-tls.key': 'tls-key', 'ldap.bindPW': 'reader-pw',
    'server.secretkey': 'KEY', 'admin.password': '$2b$HASH', 'admin.passwordMtime': '2026-01-01T00:00:00Z',
    'accounts.alice.password': '$2b$ALICE', 'accounts.alice.tokens': '[]', 'idp.signingKeys': '[PRIVATE]', 'idp.cookieKeys': '[COOKIE]', 'mfa.alice': 'TOTP',
  })],
  [INITIAL_ADMIN_SECRET, secret(INITIAL_ADMIN_SECRET, { [PART_OF_LABEL]: PART_OF_VALUE }, { password: 'initial-pw', 'oidc.clientSecret': 'x' })],
  ['ours', secret('ours', { [PART_OF_LABEL]: PART_OF_VALUE }, { password: 'ours-pw' })],
  ['argocd-secret', secret('argocd-secret', { [PART_OF_LABEL]: 'argocd' }, { password: 'argocd-pw' })],
  ['other-label', secret('other-label', { 'app.kubernetes.io/name': PART_OF_VALUE }, { password: 'other-pw' })],
  ['upper', secret('upper', { [PART_OF_LABEL]: 'SVC' }, { password: 'upper-pw' })],
  ['unlabelled', secret('unlabelled', {}, { password: 'unlabelled-pw' })],
]);

/** The value, or the problems reported, formatted as an operator reads them. */
function resolve(value: string): { value: string | undefined; problems: string[] } {
  const sink = new ProblemSink();
  const resolved = resolveSecretReference(value, SECRETS, sink.scoped('svc-cm', ['oidc.config']), ['clientSecret']);
  return { value: resolved, problems: sink.problems.map(formatProblem) };
}

describe('config/secret-ref', () => {
  it('reads a key of svc-secret, and of a Secret labelled part-of svc', () => {
    expect(resolve('$oidc.clientSecret')).to.deep.equal({ value: 's3cret', problems: [] });
    expect(resolve('$ours:password')).to.deep.equal({ value: 'ours-pw', problems: [] });
  });

  it('refuses a Secret whose part-of label names another application, or has another case', () => {
    for (const name of ['argocd-secret', 'upper']) {
      expect(resolve(`$${name}:password`)).to.deep.equal({
        value: undefined,
        problems: [`svc-cm: oidc.config: clientSecret: references secret '${name}', which lacks the label ${PART_OF_LABEL}: ${PART_OF_VALUE}`],
      });
    }
  });

  it('refuses a Secret without the part-of label, even with another label valued svc', () => {
    for (const name of ['unlabelled', 'other-label']) {
      expect(resolve(`$${name}:password`).problems).to.deep.equal([`svc-cm: oidc.config: clientSecret: references secret '${name}', which lacks the label ${PART_OF_LABEL}: ${PART_OF_VALUE}`]);
    }
  });

  it('refuses every key svc keeps for itself, however the reference is written, naming the key and why', () => {
    const own: readonly [string, string, string][] = [
      ['$server.secretkey', 'server.secretkey', "svc-secret's server.* keys hold svc's session and API token signing key"],
      ['$svc-secret:server.secretkey', 'server.secretkey', "svc-secret's server.* keys hold svc's session and API token signing key"],
      ['$admin.password', 'admin.password', "svc-secret's admin.* keys hold the admin account's password hash and its change time"],
      ['$admin.passwordMtime', 'admin.passwordMtime', "svc-secret's admin.* keys hold the admin account's password hash and its change time"],
      ['$accounts.alice.password', 'accounts.alice.password', "svc-secret's accounts.* keys hold the local accounts' password hashes and API token records"],
      ['$accounts.alice.tokens', 'accounts.alice.tokens', "svc-secret's accounts.* keys hold the local accounts' password hashes and API token records"],
      ['$idp.signingKeys', 'idp.signingKeys', "svc-secret's idp.* keys hold the identity provider's signing and cookie keys"],
      ['$idp.cookieKeys', 'idp.cookieKeys', "svc-secret's idp.* keys hold the identity provider's signing and cookie keys"],
      ['$mfa.alice', 'mfa.alice', "svc-secret's mfa.* keys hold second-factor material"],
    ];
    for (const [reference, key, why] of own) {
      expect(resolve(reference), reference).to.deep.equal({
        value: undefined,
        problems: [`svc-cm: oidc.config: clientSecret: references key '${key}' of Secret 'svc-secret', which svc keeps for itself (${why}); configuration may not read it`],
      });
    }
  });

  it('refuses every key of svc-initial-admin-secret, labelled part-of svc though it is', () => {
    for (const key of ['password', 'oidc.clientSecret']) {
      expect(resolve(`$${INITIAL_ADMIN_SECRET}:${key}`)).to.deep.equal({
        value: undefined,
        problems: [`svc-cm: oidc.config: clientSecret: references key '${key}' of Secret '${INITIAL_ADMIN_SECRET}', which svc keeps for itself (${INITIAL_ADMIN_SECRET} holds the initial admin password); configuration may not read it`],
      });
    }
  });

  it('refuses an owned key before looking it up: a missing one is refused the same way', () => {
    const none: SecretLookup = new Map();
    const sink = new ProblemSink();
    expect(resolveSecretReference('$admin.anything', none, sink.scoped('svc-cm', ['idp.config']), ['bindPW'])).to.equal(undefined);
    expect(sink.problems.map(formatProblem)).to.deep.equal([
      "svc-cm: idp.config: bindPW: references key 'admin.anything' of Secret 'svc-secret', which svc keeps for itself (svc-secret's admin.* keys hold the admin account's password hash and its change time); configuration may not read it",
    ]);
  });

  it('still reads a configuration key whose name only starts like an owned one', () => {
    expect(resolve('$server-tls.key')).to.deep.equal({ value: 'tls-key', problems: [] });
    expect(resolve('$ldap.bindPW')).to.deep.equal({ value: 'reader-pw', problems: [] });
  });

  it('names a missing Secret or key in full, a typo included, and never the value of a mistyped reference', () => {
    expect(resolve('$ldap.bindPw')).to.deep.equal({ value: undefined, problems: ["svc-cm: oidc.config: clientSecret: references key 'ldap.bindPw' of Secret 'svc-secret', which has no such key"] });
    expect(resolve('$ours:bindPw').problems).to.deep.equal(["svc-cm: oidc.config: clientSecret: references key 'bindPw' of Secret 'ours', which has no such key"]);
    expect(resolve('$nosuch:password')).to.deep.equal({ value: undefined, problems: ["svc-cm: oidc.config: clientSecret: references Secret 'nosuch', which does not exist"] });
    expect(resolve('$missing.key')).to.deep.equal({ value: undefined, problems: ["svc-cm: oidc.config: clientSecret: references key 'missing.key' of Secret 'svc-secret', which has no such key"] });
    expect(resolve('$ours:toString').problems).to.deep.equal(["svc-cm: oidc.config: clientSecret: references key 'toString' of Secret 'ours', which has no such key"]);
    expect(resolve('$pa ss:word')).to.deep.equal({ value: undefined, problems: ['svc-cm: oidc.config: clientSecret: is not a secret reference: use $<key> or $<secret>:<key>'] });
    expect(resolve('$oidc$clientSecret').problems).to.deep.equal(['svc-cm: oidc.config: clientSecret: is not a secret reference: use $<key> or $<secret>:<key>']);
    expect(resolve('$a:b:c').problems).to.deep.equal(['svc-cm: oidc.config: clientSecret: is not a secret reference: use $<key> or $<secret>:<key>']);
  });

  it('takes a value without `$` as it is', () => {
    expect(isSecretReference('plain')).to.equal(false);
    expect(isSecretReference('$x')).to.equal(true);
    expect(resolve('plain$text')).to.deep.equal({ value: 'plain$text', problems: [] });
  });

  it('resolves every reference inside a parsed value, or none when one fails, reporting each at its path', () => {
    const sink = new ProblemSink();
    const scoped = sink.scoped('svc-cm', ['dex.config']);
    const good = { a: '$ours:password', list: ['x', '$oidc.clientSecret', 3], nested: { n: null, t: true } };
    expect(resolveAllReferences(good, SECRETS, scoped)).to.deep.equal({ a: 'ours-pw', list: ['x', 's3cret', 3], nested: { n: null, t: true } });
    expect(sink.problems).to.deep.equal([]);
    const bad = { a: '$argocd-secret:password', list: ['$ours:password', '$nosuch:k'] };
    expect(resolveAllReferences(bad, SECRETS, scoped)).to.equal(undefined);
    expect(sink.problems.map(formatProblem)).to.deep.equal([
      `svc-cm: dex.config: a: references secret 'argocd-secret', which lacks the label ${PART_OF_LABEL}: ${PART_OF_VALUE}`,
      "svc-cm: dex.config: list[1]: references Secret 'nosuch', which does not exist",
    ]);
  });

  it('marks which values of a map or a list were read from a Secret, so that no message quotes them', () => {
    const sink = new ProblemSink();
    const { value } = resolveForChecking({ plain: 'x', pw: '$ours:password', list: ['y', '$oidc.clientSecret'] }, SECRETS, sink.scoped('svc-cm', ['dex.config']));
    const out = value as { list: string[] };
    expect(isFromSecret(out, 'pw')).to.equal(true);
    expect(isFromSecret(out, 'plain')).to.equal(false);
    expect(isFromSecret(out.list, 1), 'an item of a list').to.equal(true);
    expect(isFromSecret(out.list, 0)).to.equal(false);
  });

  it('checks the rest of an entry whose reference failed, with a stand-in that a required key accepts', () => {
    const sink = new ProblemSink();
    const { value, unresolved } = resolveForChecking({ bindPW: '$nosuch:k' }, SECRETS, sink.scoped('svc-cm', ['idp.config']));
    expect(unresolved).to.deep.equal([['bindPW']]);
    expect((value as { bindPW: string }).bindPW).to.equal(UNRESOLVED).and.to.have.length.above(0);
  });

  // Found by fuzzing workload.config (test/workload/config.fuzz.test.ts, seed 3803): the entry
  // `- $ours:password` was resolved, and "must be a map, not a string" quoted the Secret's value.
  it('leaves a reference that stands for a whole entry as written, so the message names the reference, not the value: workload.config `- $ours:password`, extension.config `extensions: [$oidc.clientSecret]`', () => {
    const sink = new ProblemSink();
    expect(resolveForChecking('$ours:password', SECRETS, sink.scoped('svc-cm', ['x']))).to.deep.equal({ value: '$ours:password', unresolved: [] });
    parseWorkloadConfig('- $ours:password\n', SECRETS, sink.scoped('svc-cm').at('workload.config'));
    parseExtensionConfig('extensions: [$oidc.clientSecret]', SECRETS, sink.scoped('svc-cm').at('extension.config'));
    const problems = sink.problems.map(formatProblem);
    expect(problems).to.include("svc-cm: workload.config[0]: '$ours:password' must be a map, not a string");
    expect(problems.join('\n')).to.not.contain('ours-pw').and.not.contain('s3cret');
  });
});
