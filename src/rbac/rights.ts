/**
 * The rights currently in force. `update` builds the new enforcer completely before it swaps the
 * reference, so a decision is always made by one whole policy, and the old decision cache goes
 * away with the old enforcer. Updates are applied in call order: a slow build of an older policy
 * never replaces a newer one.
 */
import { createEnforcer } from './enforcer.js';
import type { EnforcerOptions, RbacEnforcer } from './enforcer.js';
import type { Policy } from './policy.js';

export interface Rights {
  can(subjects: readonly string[], resource: string, action: string, object: string): boolean;
  readonly policy: Policy;
  update(policy: Policy): Promise<void>;
}

export async function createRights(initialPolicy: Policy, options: EnforcerOptions = {}): Promise<Rights> {
  let current: RbacEnforcer = await createEnforcer(initialPolicy, options);
  let generation = 0;
  return {
    can: (subjects, resource, action, object) => current.can(subjects, resource, action, object),
    get policy() {
      return current.policy;
    },
    async update(policy) {
      const mine = ++generation;
      const next = await createEnforcer(policy, options);
      if (mine === generation) current = next;
    },
  };
}
