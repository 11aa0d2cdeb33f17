/**
 * identityOf (connectors/saml/identity.ts) on attributes as node-saml gives them (one value
 * flattened to itself, several to an array): Dex's mapping of NameID, user name, email and
 * groups, and allowedGroups.
 */
import { expect } from 'chai';
import { DEFAULT_NAME_ID_POLICY_FORMAT, type SamlConfig } from '../../../connectors/saml/config.js';
import { REFUSED } from '../../../connectors/saml/errors.js';
import { identityOf } from '../../../connectors/saml/identity.js';

const CONFIG: SamlConfig = {
  ssoURL: 'https://idp.example/sso', insecureSkipSignatureValidation: false, usernameAttr: 'uid', emailAttr: 'mail',
  groupsAttr: 'groups', filterGroups: false, nameIDPolicyFormat: DEFAULT_NAME_ID_POLICY_FORMAT,
};
const ATTRIBUTES = { uid: ['alice', 'second'], mail: 'alice@example.org', groups: ['admins', 'devs', { _: 'nested' }, 'devs'] };

function refusal(run: () => unknown): { message: string; reason: string } | undefined {
  try {
    run();
    return undefined;
  } catch (err: unknown) {
    return { message: (err as Error).message, reason: (err as { reason: string }).reason };
  }
}

describe('saml identity', () => {
  it('maps NameID, the first user name and email, every group once (strings only), email verified', () => {
    const { claims, ...identity } = identityOf(CONFIG, 'n-1', ATTRIBUTES, true);
    expect(identity).to.deep.equal({ userId: 'n-1', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['admins', 'devs'] });
    // For the claim rules: every attribute as a list of its strings, and the NameID.
    expect(claims).to.deep.equal({ uid: ['alice', 'second'], mail: ['alice@example.org'], groups: ['admins', 'devs', 'devs'], nameID: 'n-1' });
    expect(identityOf(CONFIG, 'n-1', { ...ATTRIBUTES, groups: 'solo' }, true).groups).to.deep.equal(['solo']);
    expect(identityOf(CONFIG, 'n-1', ATTRIBUTES, false).groups).to.deep.equal([]);
  });

  it('gives no groups without groupsAttr, or when the attribute is missing', () => {
    const { groupsAttr: _g, ...withoutGroups } = CONFIG;
    expect(identityOf(withoutGroups, 'n-1', ATTRIBUTES, true).groups).to.deep.equal([]);
    expect(identityOf(CONFIG, 'n-1', { uid: 'alice', mail: 'a@x' }, true).groups).to.deep.equal([]);
  });

  it('refuses an assertion without NameID, user name or email, naming the attributes present', () => {
    for (const nameId of [undefined, '']) {
      expect(refusal(() => identityOf(CONFIG, nameId, ATTRIBUTES, true))).to.deep.equal({ message: REFUSED.incomplete, reason: 'the assertion has no NameID' });
    }
    expect(refusal(() => identityOf(CONFIG, 'n', { mail: 'a@x', other: 'y' }, true))).to.deep.equal({ message: REFUSED.incomplete, reason: "the assertion has no usernameAttr attribute 'uid'; attributes present: mail, other" });
    expect(refusal(() => identityOf(CONFIG, 'n', { uid: '', mail: 'a@x' }, true))?.reason).to.equal("the assertion has no usernameAttr attribute 'uid'; attributes present: uid, mail");
    expect(refusal(() => identityOf(CONFIG, 'n', { uid: 'alice' }, true))?.reason).to.equal("the assertion has no emailAttr attribute 'mail'; attributes present: uid");
    expect(refusal(() => identityOf(CONFIG, 'n', {}, true))?.reason).to.equal("the assertion has no usernameAttr attribute 'uid'; attributes present: (none)");
    expect(refusal(() => identityOf(CONFIG, 'n', { uid: { _: 'x' }, mail: 'a@x' }, true))?.reason).to.equal("the assertion has no usernameAttr attribute 'uid'; attributes present: uid, mail");
  });

  it('allowedGroups: refuses a user in none (saying which groups they have), and one when groupsAttr is not set', () => {
    expect(refusal(() => identityOf({ ...CONFIG, allowedGroups: ['ops'] }, 'n', { ...ATTRIBUTES, groups: [] }, true))).to.deep.equal({ message: REFUSED.notAllowed, reason: 'user alice is in none of allowedGroups (ops); their groups: (none)' });
    const { groupsAttr: _g, ...withoutGroups } = CONFIG;
    expect(refusal(() => identityOf({ ...withoutGroups, allowedGroups: ['admins'] }, 'n', ATTRIBUTES, true))).to.deep.equal({ message: REFUSED.notAllowed, reason: 'allowedGroups is set but groupsAttr is not: no user can be in an allowed group' });
    expect(identityOf({ ...CONFIG, allowedGroups: ['devs'] }, 'n', ATTRIBUTES, false).groups).to.deep.equal([]);
  });
});
