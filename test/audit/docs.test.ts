/** docs/audit.md stays true: each example line matches the schema, and every action svc records has one. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { validAuditLine } from '../helpers/audit-schema.js';

const DOC = readFileSync(new URL('../../docs/audit.md', import.meta.url), 'utf8');
const ACTIONS = [
  'login', 'lockout-started', 'lockout-lifted', 'token-created', 'token-deleted', 'password-changed', 'session-ended', 'rights-refused',
  'config-applied', 'config-refused', 'signing-keys-rotated', 'initial-password-read', 'client-token-issued', 'client-token-refused', 'client-token-introspected', 'client-token-revoked',
  'backchannel-logout', 'idp-session-ended', 'idp-grant-revoked', 'second-factor-enrolled', 'second-factor-removed', 'recovery-code-used', 'recovery-codes-replaced',
  'account-created', 'account-password-set', 'account-disabled', 'account-enabled', 'second-factor-reset',
  'assertion-key-rotated', 'sso-identity-refused',
];

describe('docs/audit.md', () => {
  const examples = [...DOC.matchAll(/```json\n(.*)\n```/g)].map((m) => m[1] as string);

  it('every example line matches docs/audit.schema.json', () => {
    expect(examples.length).to.be.greaterThan(ACTIONS.length);
    for (const line of examples) validAuditLine(line);
  });

  it('every action svc records has an example line and a row in the table', () => {
    const shown = new Set(examples.map((l) => ((JSON.parse(l) as { event: { action: string } }).event.action)));
    for (const action of ACTIONS) {
      expect(shown.has(action), action).to.equal(true);
      expect(DOC, action).to.include(`\`${action}\``);
    }
  });
});
