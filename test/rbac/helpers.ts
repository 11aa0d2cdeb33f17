import { expect } from 'chai';
import { ProblemSink } from '../../src/config/problems.js';
import { parsePolicy } from '../../src/rbac/policy.js';
import type { Policy, PolicyInput } from '../../src/rbac/policy.js';

/** A policy that must parse without problems. */
export function policyOf(csv: string, rest: Omit<PolicyInput, 'csv'> = {}): Policy {
  const sink = new ProblemSink();
  const policy = parsePolicy({ csv, ...rest }, sink.scoped('svc-rbac-cm'));
  expect(sink.problems).to.deep.equal([]);
  return policy;
}
