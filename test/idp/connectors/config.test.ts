/**
 * The claim rules at the seam every connector passes through (src/idp/connectors/config.ts):
 * idp.config takes the three keys in every type's `config`, reports a bad expression at its key
 * path (the entry is then not used), says "did you mean" for a misspelt key, and wraps the
 * type's factory so its identities come out under the rules, with no code in the type.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { ConnectorDeps, ConnectorType, Identity, LoginContext, PasswordConnector } from '../../../connectors/connector.js';
import { isMap } from '../../../connectors/config-schema.js';
import { CONNECTOR_TYPES, connectorTypes } from '../../../connectors/registry.js';
import { ClaimRuleRefused } from '../../../src/claims/evaluate.js';
import { formatProblem, ProblemSink } from '../../../src/config/problems.js';
import { parseIdpConfig } from '../../../src/idp/connectors/config.js';
import { FUZZ_SECRETS } from '../../helpers/config-fuzz.js';

const ALICE: Identity = { userId: 'a-1', username: 'Alice', preferredUsername: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['staff', 'contractors'] };

/** A type with no code for the rules: it knows one key, `value`, and hands out ALICE. */
const plain: ConnectorType = {
  type: 'plain',
  parse({ raw, at }) {
    if (!isMap(raw)) return undefined;
    for (const key of Object.keys(raw)) if (key !== 'value') at.add([key], 'unknown key');
    return () => ({ kind: 'password', prompt: 'Name', login: () => Promise.resolve(ALICE) }) satisfies PasswordConnector;
  },
};

const deps = { upstreamFetch: () => fetch, now: () => new Date(), log: pino({ level: 'silent' }) } satisfies ConnectorDeps;
const ctx: LoginContext = { callbackUrl: 'https://svc.example/api/idp/callback', wantGroups: true, signal: new AbortController().signal };

function parse(yaml: string) {
  const sink = new ProblemSink();
  const idp = parseIdpConfig(yaml, FUZZ_SECRETS, sink.scoped('svc-cm', ['idp.config']), undefined, connectorTypes(plain, ...CONNECTOR_TYPES.values()));
  return { idp, problems: sink.problems.map(formatProblem) };
}

describe('idp.config: the claim rules of every connector', () => {
  it('applies a connector\'s rules to the identity its type hands out, with no code in the type', async () => {
    const { idp, problems } = parse(`connectors:
  - type: plain
    id: p
    name: P
    config:
      value: 1
      claimMappings:
        groups: { expression: 'claims.groups.filter(g, g != "contractors").map(g, "corp:" + g)' }
      userValidationRules:
        - expression: 'user.groups.size() > 0'
          message: 'only staff log in here'
`);
    expect(problems).to.deep.equal([]);
    const connector = idp?.connectors[0]?.open(deps) as PasswordConnector;
    expect(await connector.login('alice', 'pw', ctx)).to.deep.equal({ ...ALICE, groups: ['corp:staff'] });
  });

  it('refuses the login with the rule\'s message when the rule gives false', async () => {
    const { idp } = parse(`connectors:
  - type: plain
    id: p
    name: P
    config:
      claimValidationRules:
        - expression: '!("contractors" in claims.groups)'
          message: 'contractors use the partner portal'
`);
    const connector = idp?.connectors[0]?.open(deps) as PasswordConnector;
    const err = await connector.login('alice', 'pw', ctx).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(ClaimRuleRefused);
    expect((err as Error).message).to.equal('contractors use the partner portal');
  });

  it('names the key of a bad expression with CEL\'s message and leaves the entry out; a misspelt key gets "did you mean"', () => {
    const { idp, problems } = parse(`connectors:
  - type: plain
    id: p
    name: P
    config:
      claimMappings:
        groups: { expression: 'claims.groups.exists(g, g == "a")' }
  - type: oidc
    id: up
    name: Up
    config:
      issuer: https://accounts.example.com
      clientID: abc
      clientSecret: s
      claimMapings:
        username: { expression: claims.sub }
      claimValidationRules:
        - expression: 'claims.email_verified =='
`);
    expect(idp?.connectors).to.deep.equal([]);
    expect(problems[0]).to.equal('svc-cm: idp.config: connectors[0].config.claimMappings.groups.expression: must give a string or a list of strings, but gives true or false');
    expect(problems[1]).to.match(/^svc-cm: idp\.config: connectors\[1\]\.config\.claimValidationRules\[0\]\.expression: does not compile: <input>:1:\d+: /);
    expect(problems[2]).to.equal("svc-cm: idp.config: connectors[1].config.claimMapings: unknown key; did you mean 'claimMappings'?");
    expect(problems).to.have.length(3);
  });
});
