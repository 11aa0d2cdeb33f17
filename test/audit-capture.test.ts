/** The suite-wide audit check (audit-capture.ts) finds what it is there to find. */
import { expect } from 'chai';
import { captureAuditEvent, checkCapturedAudit, registerAuditSecret } from './audit-capture.js';
import { PASSWORDS } from './helpers/accounts-fixture.js';

const FINE = { category: 'iam', type: 'change', action: 'password-changed', outcome: 'success', user: { name: 'alice' } } as const;

describe('audit capture check', () => {
  // The lines of earlier tests in this process are checked on their own, by the root hook.
  beforeEach(() => expect(checkCapturedAudit()).to.deep.equal([]));

  it('passes clean lines, and empties the capture once checked', () => {
    captureAuditEvent(FINE);
    expect(checkCapturedAudit()).to.deep.equal([]);
  });

  it('finds a fixture password, a registered secret and a test source literal in any field', () => {
    registerAuditSecret('a-token-the-test-used');
    captureAuditEvent({ ...FINE, reason: `got ${PASSWORDS.bob}` });
    captureAuditEvent({ ...FINE, svc: { note: 'x a-token-the-test-used y' } });
    // A literal of this file, found by reading the test sources.
    const literal = { password: 'literal-in-a-test-source' };
    captureAuditEvent({ ...FINE, user: { name: literal.password } });
    const problems = checkCapturedAudit();
    expect(problems).to.have.length(3);
    for (const p of problems) expect(p).to.match(/^a secret the tests used \(\d+ characters, starting '..'\) in an audit line: /);
  });

  it('finds the shape of a JWT, a bcrypt hash and a PEM block, and a line off the schema', () => {
    captureAuditEvent({ ...FINE, svc: { t: 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln' } });
    captureAuditEvent({ ...FINE, svc: { h: '$2b$10$abcdefghijklmnopqrstuv' } });
    captureAuditEvent({ ...FINE, svc: { k: '-----BEGIN PRIVATE KEY-----' } });
    captureAuditEvent({ ...FINE, action: 'Not Kebab' });
    const problems = checkCapturedAudit();
    expect(problems.map((p) => p.split(':')[0])).to.deep.equal(['a JWT in an audit line', 'a bcrypt hash in an audit line', 'a PEM block in an audit line', 'audit line does not match docs/audit.schema.json']);
  });
});
