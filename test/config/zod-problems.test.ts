/**
 * zod's issues in svc's words (src/config/zod-problems.ts): the key path, the offending value
 * quoted when it is not secret, and never zod's own sentences. What is never quoted: a value read
 * from a Secret, a value under a key named like a password, secret, token or key, and a URL's
 * user information.
 */
import { expect } from 'chai';
import { z } from 'zod';
import { SETTINGS_SECRET, type SecretObject } from '../../src/config/manifests.js';
import { ProblemSink, formatProblem } from '../../src/config/problems.js';
import { resolveForChecking, withoutKey } from '../../src/config/secret-ref.js';
import { parseWith, quoted } from '../../src/config/zod-problems.js';

const schema = z.strictObject({
  host: z.string().refine((v) => !v.includes('/'), 'not a host name'),
  port: z.number().optional(),
  mode: z.enum(['a', 'b']).optional(),
  bindPW: z.number().optional(),
  clientSecret: z.number().optional(),
  nested: z.strictObject({ apiKey: z.number().optional(), tokenURL: z.url().optional() }).optional(),
});

const SECRETS = new Map<string, SecretObject>([[SETTINGS_SECRET, { name: SETTINGS_SECRET, file: 's.yaml', labels: {}, data: { host: 'secret-host/s3cr3t' } }]]);

/** The problems of parsing `raw` (its references resolved first), as an operator reads them. */
function problemsOf(raw: Record<string, unknown>): string[] {
  const sink = new ProblemSink();
  const at = sink.scoped('svc-cm', ['x.config']);
  const { value, unresolved } = resolveForChecking(raw, SECRETS, at);
  parseWith(schema, value, at, unresolved);
  return sink.problems.map(formatProblem);
}

describe('config/zod-problems', () => {
  it('quotes a value written in the ConfigMap, before svc\'s sentence', () => {
    expect(problemsOf({ host: 'ldap.example.org/x', port: 'ten', mode: 'c' })).to.deep.equal([
      "svc-cm: x.config: host: 'ldap.example.org/x' is not a host name",
      "svc-cm: x.config: port: 'ten' must be a number, not a string",
      "svc-cm: x.config: mode: 'c' must be one of 'a', 'b'",
    ]);
  });

  it('never quotes a value read from a Secret', () => {
    const problems = problemsOf({ host: '$host' });
    expect(problems).to.deep.equal(['svc-cm: x.config: host: not a host name']);
  });

  it('never quotes a value under a key named like a secret, wherever it stands', () => {
    expect(problemsOf({ host: 'h', bindPW: 'hunter2', clientSecret: 'hunter3', nested: { apiKey: 'hunter4' } })).to.deep.equal([
      'svc-cm: x.config: bindPW: must be a number, not a string',
      'svc-cm: x.config: clientSecret: must be a number, not a string',
      'svc-cm: x.config: nested.apiKey: must be a number, not a string',
    ]);
  });

  it('quotes a key that only mentions a token (tokenURL), and says what zod would not', () => {
    expect(problemsOf({ host: 'h', nested: { tokenURL: 'nope' } })).to.deep.equal(["svc-cm: x.config: nested.tokenURL: 'nope' is not a valid URL"]);
  });

  it('keeps the marks of a Secret\'s values on a map without one of its keys', () => {
    const sink = new ProblemSink();
    const at = sink.scoped('svc-cm', ['x.config']);
    const { value } = resolveForChecking({ host: '$host', redirectURI: 'x' }, SECRETS, at);
    parseWith(schema, withoutKey(value as Record<string, unknown>, 'redirectURI'), at);
    expect(sink.problems.map(formatProblem)).to.deep.equal(['svc-cm: x.config: host: not a host name']);
  });

  it('masks the user information of a URL, cuts a long value, escapes control characters', () => {
    expect(quoted('https://ops:hunter2@wiki.example.org/cb')).to.equal("'https://…@wiki.example.org/cb'");
    expect(quoted(`https://ops:${'p'.repeat(80)}@wiki.example.org/cb`)).to.equal("'https://…@wiki.example.org/cb'");
    expect(quoted('x'.repeat(70))).to.equal(`'${'x'.repeat(60)}…'`);
    expect(quoted('-----BEGIN CERTIFICATE-----\nMIIB')).to.equal("'-----BEGIN CERTIFICATE-----…'");
    expect(quoted("a\rb'c")).to.equal("'a\\rb\\'c'");
  });
});
