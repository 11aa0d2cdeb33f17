/**
 * workload.config under fuzzing (docs/reliability.md): YAML text, random documents and variants
 * of valid issuers. Never a throw; every input parses or gives problems with their key paths,
 * none repeating a secret.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import YAML from 'yaml';
import { parseWorkloadConfig } from '../../src/workload/config.js';
import { FUZZ_SECRETS, Outcomes, parseChecked } from '../helpers/config-fuzz.js';
import { fuzzOptions, mutated } from '../helpers/fuzz.js';
import { TEST_CA } from '../connectors/helpers.js';

const VALID = [
  { name: 'github', issuer: 'https://token.actions.githubusercontent.com', audiences: ['https://svc.example.com'], claims: { repository_owner: 'my-org', ref: ['refs/heads/main', 'refs/tags/v*'] }, subject: 'repo:{{repository}}', groups: ['ci', { claim: 'groups' }], maxTokenLifetime: '15m' },
  { name: 'k8s', issuer: 'https://kubernetes.default.svc', jwksURL: 'https://kubernetes.default.svc/openid/v1/jwks', rootCA: TEST_CA, audiences: ['svc'], claims: { 'kubernetes\\.io.namespace': 'ci' }, subject: '{{kubernetes\\.io.serviceaccount.name}}', groups: ['ns-{{kubernetes\\.io.namespace}}'] },
];

const text = fc.oneof(
  { weight: 6, arbitrary: mutated(VALID).map((doc) => YAML.stringify(doc)) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 4 }).map((doc) => YAML.stringify(doc)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constant(YAML.stringify(VALID)), fc.nat()).map(([t, n]) => t.slice(0, n % t.length)) },
);

describe('workload.config under fuzzing', function () {
  this.timeout(60_000);

  it('never throws; parses, or names each problem by its key path without a secret (400 cases, seed 3803)', () => {
    const outcomes = new Outcomes();
    fc.assert(
      fc.property(text, (yaml) => {
        parseChecked('workload.config', (sink) => parseWorkloadConfig(yaml, FUZZ_SECRETS, sink), outcomes);
      }),
      fuzzOptions(3803, 400),
    );
    expect(outcomes.clean, 'valid variants').to.be.greaterThan(10);
    expect(outcomes.refused, 'refused variants').to.be.greaterThan(100);
  });

  it('the starting configuration is valid', () => {
    expect(parseChecked('workload.config', (sink) => parseWorkloadConfig(YAML.stringify(VALID), FUZZ_SECRETS, sink), new Outcomes())).to.deep.equal([]);
  });
});
