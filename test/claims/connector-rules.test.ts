import { expect } from 'chai';
import { pino } from 'pino';
import type { Connector, ConnectorDeps, Identity, LoginContext, PasswordConnector } from '../../connectors/connector.js';
import { ProblemSink } from '../../src/config/problems.js';
import { ClaimRuleRefused } from '../../src/claims/evaluate.js';
import { identityUnderRules, withClaimRules } from '../../src/claims/connector-rules.js';
import { NO_CLAIM_RULES, parseClaimRules, type ClaimRules } from '../../src/claims/rules-config.js';

function rules(raw: Record<string, unknown>): ClaimRules {
  const parsed = parseClaimRules(raw, new ProblemSink().scoped('svc-cm').at('idp.config', 'connectors', 0, 'config'));
  if (parsed === undefined) throw new Error('bad rules');
  return parsed;
}

const IDENTITY: Identity = {
  userId: 'uid-7', username: 'Ann Example', preferredUsername: 'ann', email: 'ann@example.com', emailVerified: true, groups: ['staff'],
  claims: { uid: ['ann'], mail: ['ann@example.com'], departmentNumber: ['42'], groups: ['staff'] },
};
const ctx: LoginContext = { callbackUrl: 'https://svc.example/api/idp/callback', wantGroups: true, signal: new AbortController().signal };
const deps = { upstreamFetch: () => fetch, now: () => new Date(), log: pino({ level: 'silent' }) } satisfies ConnectorDeps;

describe('claims/connector-rules', () => {
  it('maps the connector\'s claims onto the identity: username to preferred_username, name to the name, groups replaced; claims are not kept', () => {
    const out = identityUnderRules(rules({
      claimMappings: {
        username: { expression: 'claims.uid[0]' },
        name: { expression: '"Dept " + claims.departmentNumber[0]' },
        groups: { expression: 'claims.groups.map(g, "ldap:" + g)' },
      },
    }), IDENTITY);
    expect(out).to.deep.equal({ userId: 'uid-7', username: 'Dept 42', preferredUsername: 'ann', email: 'ann@example.com', emailVerified: true, groups: ['ldap:staff'] });
    expect(identityUnderRules(NO_CLAIM_RULES, IDENTITY)).to.not.have.property('claims');
  });

  it('keeps email_verified only when the mapped email is the one the source verified', () => {
    const same = identityUnderRules(rules({ claimMappings: { email: { expression: 'claims.mail[0]' } } }), IDENTITY);
    expect(same).to.include({ email: 'ann@example.com', emailVerified: true });
    const other = identityUnderRules(rules({ claimMappings: { email: { expression: '"x@elsewhere.example"' } } }), IDENTITY);
    expect(other).to.include({ email: 'x@elsewhere.example', emailVerified: false });
  });

  it('reads the identity\'s own fields as claims when the connector gives none (a connector without code for the rules)', () => {
    const { claims: _c, ...bare } = IDENTITY;
    const out = identityUnderRules(rules({ claimValidationRules: [{ expression: 'claims.email_verified && claims.preferred_username == "ann" && "staff" in claims.groups', message: 'no' }] }), bare);
    expect(out.username).to.equal('Ann Example');
  });

  it('wraps every connector: a login refused by a rule throws its message, a refresh refused gives null, other members pass through', async () => {
    const connector: PasswordConnector = {
      kind: 'password', prompt: 'Username',
      login: () => Promise.resolve(IDENTITY),
      refresh: () => Promise.resolve(IDENTITY),
    };
    const open = withClaimRules(() => connector as Connector, rules({ userValidationRules: [{ expression: '!("staff" in user.groups)', message: 'staff use the other door' }] }));
    const wrapped = open(deps) as PasswordConnector;
    expect(wrapped.kind).to.equal('password');
    expect(wrapped.prompt).to.equal('Username');
    const err = await wrapped.login('ann', 'pw', ctx).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(ClaimRuleRefused);
    expect((err as Error).message).to.equal('staff use the other door');
    expect(await wrapped.refresh?.(IDENTITY, ctx)).to.equal(null);
  });

  it('hands back unchanged an identity a refresh returns as it was given, with nothing new read: the mapped values are not mapped again', async () => {
    const mapping = rules({ claimMappings: { groups: { expression: 'claims.groups.map(g, "corp:" + g)' } } });
    const { claims: _c, ...stored } = identityUnderRules(mapping, IDENTITY);
    expect(stored.groups).to.deep.equal(['corp:staff']);
    const connector: PasswordConnector = { kind: 'password', prompt: 'Username', login: () => Promise.resolve(null), refresh: (identity) => Promise.resolve({ ...identity, connectorData: 'new' }) };
    const wrapped = withClaimRules(() => connector, mapping)(deps) as PasswordConnector;
    expect((await wrapped.refresh?.(stored, ctx))?.groups).to.deep.equal(['corp:staff']);
    // With something new read (its claims), the rules apply again.
    const reread: PasswordConnector = { ...connector, refresh: () => Promise.resolve(IDENTITY) };
    expect((await (withClaimRules(() => reread, mapping)(deps) as PasswordConnector).refresh?.(stored, ctx))?.groups).to.deep.equal(['corp:staff']);
  });
});
