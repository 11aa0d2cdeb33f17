/**
 * One immutable policy (built-in roles first, then the operator's lines) loaded into an engine,
 * with a bounded decision cache that lives and dies with it: a policy change builds a new
 * enforcer (./rights.ts), so no cached decision survives it.
 *
 * A request carries several subjects: the user and its groups. The engine gives each subject an
 * outcome (allow, deny, or no matching rule) and the outcomes combine as:
 *   1. any subject denied           -> no  (deny over allow across subjects too, so a deny
 *                                           written for a group cannot be undone by a user rule)
 *   2. any subject allowed          -> yes
 *   3. no rule matched any subject  -> the answer for `policy.defaultRole` alone, else no.
 * Argo CD differs in both: it ORs the subjects (a group deny does not block a user allow) and
 * asks the default role FIRST, so an explicit deny can never take away what the default role
 * grants. We follow DESIGN §5 ("deny wins"; "a subject with no matching rule falls back to
 * policy.default") instead: the default role only speaks when nothing else did. See docs/rbac.md.
 */
import { newEnforcer } from 'casbin';
import type { Adapter, Model } from 'casbin';
import { BUILTIN_RULES } from './builtin.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import { createGlobMatch } from './glob.js';
import { createIndexedOutcome } from './indexed.js';
import type { Outcome, SubjectOutcome } from './indexed.js';
import { GLOB_FUNCTION, newRbacModel } from './model.js';
import type { Policy, PolicyRule } from './policy.js';
import { createExplain, type Explain } from './explain.js';

export const DECISION_CACHE_ENTRIES = 100_000;
/**
 * The decision cache is also bounded by the size of its keys (UTF-16: 2 bytes a character, plus
 * DECISION_ENTRY_OVERHEAD_BYTES for the entry), because callers choose them: the object of a
 * can-i or an account read is whatever the URL says. 32 MiB holds the 100,000 entries of
 * ordinary requests (subjects, resource, action and a name of some dozens of characters).
 */
export const DECISION_CACHE_BYTES = 32 * 1024 * 1024;
const DECISION_ENTRY_OVERHEAD_BYTES = 64;
/** A longer key is not cached: no real subject list and object come near it, and one would fill a generation. */
export const MAX_CACHED_KEY_CHARS = 2048;

/**
 * `indexed` (default): ./indexed.ts, same answers, cost independent of the policy size.
 * `casbin`: casbin's `enforceExSync` over the whole policy; the reference the indexed engine is
 * tested against, and what the bench compares with.
 */
export type Engine = 'indexed' | 'casbin';
export const DEFAULT_ENGINE: Engine = 'indexed';

export interface RbacEnforcer {
  can(subjects: readonly string[], resource: string, action: string, object: string): boolean;
  /** After a refusal: the line or default that decided (explain.ts); never asked on an allowed request. */
  readonly explain?: Explain;
  readonly policy: Policy;
  /** What the decision cache holds now: entries, and bytes as counted by decisionKeyBytes. */
  cached(): { readonly entries: number; readonly bytes: number };
}

type Decide = RbacEnforcer['can'];

export interface EnforcerOptions {
  readonly engine?: Engine;
  /** Bound of the decision cache; 0 turns it off (the bench and `canOffline` use that). */
  readonly decisionCacheEntries?: number;
  /** Bound of the decision cache's keys, in bytes (DECISION_CACHE_BYTES). */
  readonly decisionCacheBytes?: number;
}

export async function createEnforcer(policy: Policy, options: EnforcerOptions = {}): Promise<RbacEnforcer> {
  const engine = options.engine ?? DEFAULT_ENGINE;
  const inForce = await decider(policy.lines, policy.defaultRole, engine);
  const restrictTo = policy.restrictTo;
  // A bad change in force: yes only where the kept lines AND the readable new lines say yes (policy.ts).
  const narrowing = restrictTo === undefined ? undefined : await decider(restrictTo, policy.defaultRole, engine);
  const decide: Decide = narrowing === undefined ? inForce : (subjects, res, act, obj) => inForce(subjects, res, act, obj) && narrowing(subjects, res, act, obj);
  const explain = createExplain(withHeadFromGet([...BUILTIN_RULES, ...policy.lines]), policy.defaultRole, restrictTo !== undefined);
  const cacheEntries = options.decisionCacheEntries ?? DECISION_CACHE_ENTRIES;
  if (cacheEntries === 0) return { policy, can: decide, explain, cached: () => ({ entries: 0, bytes: 0 }) };
  const cache = new BoundedCache<string, boolean>(cacheEntries, { weight: { maxWeight: options.decisionCacheBytes ?? DECISION_CACHE_BYTES, weigh: decisionKeyBytes } });
  return { policy, can: cachedDecide(decide, cache), explain, cached: () => ({ entries: cache.size, bytes: cache.weight }) };
}

/** The operator's lines after the built-in ones, in an engine, combined across subjects. */
async function decider(lines: readonly PolicyRule[], defaultRole: string | undefined, engine: Engine): Promise<Decide> {
  const rules = withHeadFromGet([...BUILTIN_RULES, ...lines]);
  const outcome = engine === 'casbin' ? await casbinOutcome(rules) : createIndexedOutcome(rules, createGlobMatch());
  return combineSubjects(outcome, defaultRole);
}

/**
 * An extensions line for `get` speaks for HEAD too, deny included: a HEAD is a GET without its
 * body, and a `get` deny that HEAD slipped past would show what the deny hides (status, length).
 */
function withHeadFromGet(rules: readonly PolicyRule[]): PolicyRule[] {
  return rules.flatMap((rule) => (rule.kind === 'p' && rule.res === 'extensions' && rule.act === 'get' ? [rule, { ...rule, act: 'head' }] : [rule]));
}

/** The rules in the casbin model; `[false, []]` from enforceExSync means no rule matched. */
async function casbinOutcome(rules: readonly PolicyRule[]): Promise<SubjectOutcome> {
  const casbin = await newEnforcer(newRbacModel(), new RulesAdapter(rules));
  await casbin.addFunction(GLOB_FUNCTION, createGlobMatch());
  return function outcome(subject, res, act, obj): Outcome {
    const [allowed, rule] = casbin.enforceExSync(subject, res, act, obj);
    if (allowed) return 'allow';
    return rule.length > 0 ? 'deny' : 'none';
  };
}

/** Deny over allow across the subjects; the default role only when no rule matched any of them. */
function combineSubjects(outcome: SubjectOutcome, defaultRole: string | undefined): Decide {
  return function decide(subjects, res, act, obj) {
    let allowed = false;
    for (const subject of subjects) {
      const result = outcome(subject, res, act, obj);
      if (result === 'deny') return false;
      if (result === 'allow') allowed = true;
    }
    if (allowed) return true;
    return defaultRole !== undefined && outcome(defaultRole, res, act, obj) === 'allow';
  };
}


function cachedDecide(decide: Decide, cache: BoundedCache<string, boolean>): Decide {
  return function can(subjects, resource, action, object) {
    const key = decisionKey(subjects, resource, action, object);
    if (key === undefined) return decide(subjects, resource, action, object);
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const value = decide(subjects, resource, action, object);
    cache.set(key, value);
    return value;
  };
}

export function decisionKeyBytes(key: string): number {
  return key.length * 2 + DECISION_ENTRY_OVERHEAD_BYTES;
}

/**
 * Fields joined by NUL. A field holding a NUL itself (an object taken from a URL can) would let
 * two different requests share a key, so such a request is not cached at all; nor is one whose
 * key would be longer than MAX_CACHED_KEY_CHARS.
 */
function decisionKey(subjects: readonly string[], res: string, act: string, obj: string): string | undefined {
  let length = res.length + act.length + obj.length;
  for (const field of subjects) length += field.length;
  if (length > MAX_CACHED_KEY_CHARS) return undefined;
  for (const field of subjects) if (field.includes('\0')) return undefined;
  if (res.includes('\0') || act.includes('\0') || obj.includes('\0')) return undefined;
  return `${subjects.length}\0${subjects.join('\0')}\0${res}\0${act}\0${obj}`;
}

/**
 * Hands the already-validated rules straight to the model. casbin's `StringAdapter` would print
 * and re-parse them, and `addPolicies` checks every rule against all the others (quadratic: slow
 * at 10,000 lines); pushing onto the assertion is what casbin's own CSV loader does.
 */
class RulesAdapter implements Adapter {
  constructor(private readonly rules: readonly PolicyRule[]) {}

  loadPolicy(model: Model): Promise<void> {
    const p = model.model.get('p')?.get('p');
    const g = model.model.get('g')?.get('g');
    if (p === undefined || g === undefined) throw new Error('the RBAC model lacks p or g');
    for (const rule of this.rules) {
      if (rule.kind === 'p') p.policy.push([rule.sub, rule.res, rule.act, rule.obj, rule.eft]);
      else g.policy.push([rule.member, rule.role]);
    }
    return Promise.resolve();
  }

  savePolicy(): Promise<boolean> {
    return Promise.resolve(false);
  }

  addPolicy(): Promise<void> {
    return Promise.reject(new Error('the RBAC policy is read-only'));
  }

  removePolicy(): Promise<void> {
    return Promise.reject(new Error('the RBAC policy is read-only'));
  }

  removeFilteredPolicy(): Promise<void> {
    return Promise.reject(new Error('the RBAC policy is read-only'));
  }
}
