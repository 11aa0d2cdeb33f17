/**
 * The rights currently in force. `update` builds the new enforcer completely before it swaps the
 * reference, so a decision is always made by one whole policy, and the old decision cache goes
 * away with the old enforcer. Updates are applied in call order: a slow build of an older policy
 * never replaces a newer one. A policy equal to the one last asked for is not rebuilt: every
 * store change (a password set, a token issued) gives a new Policy object, and a rebuild would
 * throw away the decision cache for nothing.
 *
 * `allows` is how the product asks about a caller: the caller's subjects come from
 * `rbacSubjectsOf` (src/principal.ts) against the local accounts of this moment, so an SSO name
 * that is reserved (a role prefix, a local account's name) is never a subject. A reserved group is
 * logged once at warn per issuer and name (bounded); a reserved `sub` was refused at login, and one
 * that became reserved since (an account added) is dropped here, quietly after its first warning.
 */
import { createEnforcer } from './enforcer.js';
import type { EnforcerOptions, RbacEnforcer } from './enforcer.js';
import type { Policy } from './policy.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import { rbacSubjectsOf, type DroppedName, type LocalAccountNames, type Principal } from '../principal.js';

/** How many (issuer, name) pairs are remembered as already warned about. */
export const RESERVED_WARNINGS_REMEMBERED = 10_000;

export interface Rights {
  /** May this caller do it: its subjects by the naming rule (src/principal.ts), then can(). */
  allows(principal: Principal, resource: string, action: string, object: string): boolean;
  /**
   * After allows() said no: the caller's subject and the line or default that decided, for the
   * audit trail. Never asked on an allowed request.
   */
  explain(principal: Principal, resource: string, action: string, object: string): RefusalExplained;
  /** The engine's answer for subjects already decided (tests, `svc-server rbac can`). */
  can(subjects: readonly string[], resource: string, action: string, object: string): boolean;
  readonly policy: Policy;
  update(policy: Policy): Promise<void>;
  /** Called once a new policy answers can(): the enforcer is built asynchronously after a change. */
  onUpdate(listener: () => void): () => void;
}

export interface RefusalExplained {
  /** The caller's subjects, as the rules saw them (the user first, then its groups). */
  readonly subjects: readonly string[];
  /** The deny line, or the default, that decided. */
  readonly rule: string;
}

export type BuildEnforcer = (policy: Policy, options: EnforcerOptions) => Promise<RbacEnforcer>;

export interface RightsDeps {
  /** Builds one enforcer; tests inject a slow one to finish updates out of order. */
  readonly build?: BuildEnforcer;
  /** The local accounts now (read at each check); none but the built-in admin when absent. */
  readonly localAccountNames?: () => LocalAccountNames;
  /** Told once per (issuer, name) about an SSO name left out of a caller's subjects. */
  readonly onReserved?: (dropped: DroppedName & { readonly issuer: string }) => void;
}

const NO_ACCOUNTS: LocalAccountNames = new Set<string>();

export async function createRights(initialPolicy: Policy, options: EnforcerOptions = {}, deps: RightsDeps = {}): Promise<Rights> {
  const build = deps.build ?? createEnforcer;
  let current: RbacEnforcer = await build(initialPolicy, options);
  let generation = 0;
  let wanted = policyFingerprint(initialPolicy);
  const listeners = new Set<() => void>();
  const localAccountNames = deps.localAccountNames ?? (() => NO_ACCOUNTS);
  const warned = new BoundedCache<string, true>(RESERVED_WARNINGS_REMEMBERED);
  const { onReserved } = deps;
  const subjectsOf = (principal: Principal) => rbacSubjectsOf(principal, localAccountNames(), onReserved === undefined ? undefined : (dropped) => {
    const key = JSON.stringify([principal.issuer, dropped.as, dropped.name]);
    if (warned.get(key) !== undefined) return;
    warned.set(key, true);
    onReserved({ ...dropped, issuer: principal.issuer });
  });
  return {
    allows(principal, resource, action, object) {
      return current.can(subjectsOf(principal), resource, action, object);
    },
    explain(principal, resource, action, object) {
      const subjects = subjectsOf(principal);
      return { subjects, rule: current.explain?.(subjects, resource, action, object) ?? 'unknown: this engine does not say' };
    },
    can: (subjects, resource, action, object) => current.can(subjects, resource, action, object),
    get policy() {
      return current.policy;
    },
    async update(policy) {
      const fingerprint = policyFingerprint(policy);
      if (fingerprint === wanted) return;
      wanted = fingerprint;
      const mine = ++generation;
      let next: RbacEnforcer;
      try {
        next = await build(policy, options);
      } catch (err: unknown) {
        // The same policy asked for again must be tried again, not skipped as already wanted.
        if (mine === generation) wanted = policyFingerprint(current.policy);
        throw err;
      }
      if (mine !== generation) return;
      current = next;
      // A listener's failure is its own (it logs); the update itself has happened.
      for (const listener of listeners) {
        try {
          listener();
        } catch {
          // ignored: see above
        }
      }
    },
    onUpdate(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

const fingerprints = new WeakMap<Policy, string>();

/** What decides answers: the lines, the default role, the scopes and the narrowing lines (not where lines came from). */
export function policyFingerprint(policy: Policy): string {
  let found = fingerprints.get(policy);
  if (found === undefined) {
    found = JSON.stringify([policy.lines, policy.defaultRole ?? null, policy.scopes, policy.restrictTo ?? null]);
    fingerprints.set(policy, found);
  }
  return found;
}
