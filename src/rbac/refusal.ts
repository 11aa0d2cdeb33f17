/** A rights refusal's decision for the audit trail (PermissionDenied.decision), explained only once the answer is no. */
import type { RightsDecision } from '../errors.js';
import type { Principal } from '../principal.js';
import type { Rights } from './rights.js';

export function refusal(rights: Partial<Pick<Rights, 'explain'>>, principal: Principal, resource: string, action: string, object: string): RightsDecision {
  const explained = rights.explain?.(principal, resource, action, object) ?? { subjects: [principal.username, ...principal.groups], rule: 'unknown: not explained' };
  return { principal, subjects: explained.subjects, resource, action, object, rule: explained.rule };
}
