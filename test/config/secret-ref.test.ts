/**
 * Secret references in configuration values (src/config/secret-ref.ts): `$<key>` reads
 * svc-secret, `$<secret>:<key>` reads another Secret only when it carries the label
 * app.kubernetes.io/part-of: svc, so a Secret of another application in the same namespace
 * (Argo CD's own, labelled part-of: argocd) is never read into svc's configuration.
 */
import { expect } from 'chai';
import { PART_OF_LABEL, PART_OF_VALUE, SETTINGS_SECRET, type SecretObject } from '../../src/config/manifests.js';
import { ProblemSink, formatProblem } from '../../src/config/problems.js';
import { isSecretReference, resolveAllReferences, resolveSecretReference, type SecretLookup } from '../../src/config/secret-ref.js';

const secret = (name: string, labels: Record<string, string>, data: Record<string, string>): SecretObject => ({ name, file: `${name}.yaml`, labels, data });

const SECRETS: SecretLookup = new Map([
  [SETTINGS_SECRET, secret(SETTINGS_SECRET, {}, { 'oidc.clientSecret': 's3cret' })],
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

  it('names a missing Secret or key in full, a typo included, and never the value of a mistyped reference', () => {
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
});
