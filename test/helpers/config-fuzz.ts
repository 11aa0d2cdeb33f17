/**
 * The property every configuration parser holds under fuzzing: it never throws, and every input
 * either parses or gives problems, each under the data key with a key path and a message, none
 * repeating a secret's value.
 */
import { expect } from 'chai';
import type { SecretObject } from '../../src/config/manifests.js';
import { formatProblem, ProblemSink, type ScopedSink } from '../../src/config/problems.js';
import type { SecretLookup } from '../../src/config/secret-ref.js';

export const FUZZ_SECRET_VALUE = 'fuzz-secret-value-9d1e';

function secretObject(name: string, labels: Record<string, string>): SecretObject {
  return { name, file: `${name}.yaml`, labels, data: { 'fuzz.secret': FUZZ_SECRET_VALUE, key: FUZZ_SECRET_VALUE } };
}

/** svc-secret and one labelled Secret, each holding FUZZ_SECRET_VALUE under `fuzz.secret` and `key`. */
export const FUZZ_SECRETS: SecretLookup = new Map([
  ['svc-secret', secretObject('svc-secret', { 'app.kubernetes.io/part-of': 'svc' })],
  ['other', secretObject('other', { 'app.kubernetes.io/part-of': 'svc' })],
]);

export interface ParseOutcome {
  /** Problems as operators read them. */
  readonly problems: readonly string[];
}

/** Tallies which way the cases went, so a test can prove its generator reached both. */
export class Outcomes {
  clean = 0;
  refused = 0;
}

/**
 * Runs `parse` with a sink scoped at `svc-cm: <dataKey>` and checks the property; returns the
 * problems (formatted) for further checks.
 */
export function parseChecked(dataKey: string, parse: (sink: ScopedSink) => unknown, outcomes: Outcomes): readonly string[] {
  const sink = new ProblemSink();
  parse(sink.scoped('svc-cm').at(dataKey));
  for (const problem of [...sink.problems, ...sink.warnings]) {
    expect(problem.source).to.equal('svc-cm');
    expect(problem.path[0], formatProblem(problem)).to.equal(dataKey);
    expect(problem.message, formatProblem(problem)).to.be.a('string').and.not.equal('');
    expect(formatProblem(problem), 'a problem repeats a secret value').to.not.contain(FUZZ_SECRET_VALUE);
  }
  if (sink.problems.length === 0) outcomes.clean++;
  else outcomes.refused++;
  return sink.problems.map(formatProblem);
}
