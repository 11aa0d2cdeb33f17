/**
 * `svc-server rbac can --config DIR SUBJECT RESOURCE ACTION OBJECT`: one decision with no cache,
 * for a single user or group name (a user's groups are not known offline).
 */
import { createEnforcer } from './enforcer.js';
import type { Policy } from './policy.js';

export async function canOffline(
  policy: Policy,
  subject: string,
  resource: string,
  action: string,
  object: string,
): Promise<boolean> {
  const enforcer = await createEnforcer(policy, { decisionCacheEntries: 0 });
  return enforcer.can([subject], resource, action, object);
}
