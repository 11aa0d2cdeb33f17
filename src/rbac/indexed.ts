/**
 * The model's semantics without casbin's per-rule scan. casbin evaluates the matcher against
 * every p rule for every request: at 10,000 lines that is tens of milliseconds per subject on a
 * blocked event loop (the bench shows it; Argo CD users hit the same wall, argo-cd#17128). Here
 * p rules are indexed by subject, and a request looks only at the rules of the subject and of
 * the roles it reaches through g lines, so its cost follows what the subject holds, not the
 * size of the policy.
 *
 * It must answer exactly as casbin does with ./model.ts: `g` is reflexive and transitive up to
 * casbin's default hierarchy depth (10 links), subjects match exactly (never by glob), a deny
 * among the matching rules wins. test/rbac/engines.test.ts checks both engines on the same
 * suite and on random policies.
 */
import { BoundedCache } from '../lib/bounded-cache.js';
import type { GlobMatch } from './glob.js';
import type { PolicyRule } from './policy.js';

/** casbin's DefaultRoleManager default `maxHierarchyLevel`. */
export const MAX_ROLE_DEPTH = 10;
const CLOSURE_CACHE_ENTRIES = 10_000;
const EXTENSIONS = 'extensions';

export type Outcome = 'allow' | 'deny' | 'none';
export type SubjectOutcome = (subject: string, res: string, act: string, obj: string) => Outcome;

export type PRule = Extract<PolicyRule, { kind: 'p' }>;

export function createIndexedOutcome(rules: readonly PolicyRule[], globMatch: GlobMatch): SubjectOutcome {
  const decisive = createDecisiveRule(rules, globMatch);
  return function outcome(subject, res, act, obj) {
    const rule = decisive(subject, res, act, obj);
    return rule === undefined ? 'none' : rule.eft === 'deny' ? 'deny' : 'allow';
  };
}

/** The rule that decides for one subject: the first deny that matches, else the first allow; undefined when none matches. */
export type DecisiveRule = (subject: string, res: string, act: string, obj: string) => PRule | undefined;

export function createDecisiveRule(rules: readonly PolicyRule[], globMatch: GlobMatch): DecisiveRule {
  const bySubject = new Map<string, PRule[]>();
  const parents = new Map<string, string[]>();
  for (const rule of rules) {
    if (rule.kind === 'p') push(bySubject, rule.sub, rule);
    else push(parents, rule.member, rule.role);
  }
  const closures = new BoundedCache<string, readonly PRule[]>(CLOSURE_CACHE_ENTRIES);
  const rulesFor = (subject: string): readonly PRule[] => {
    let found = closures.get(subject);
    if (found === undefined) {
      found = reachable(subject, parents).flatMap((name) => bySubject.get(name) ?? []);
      closures.set(subject, found);
    }
    return found;
  };
  return function decisiveRule(subject, res, act, obj) {
    let allowing: PRule | undefined;
    for (const rule of rulesFor(subject)) {
      if (!globMatch(res, rule.res) || !globMatch(act, rule.act) || !globMatch(obj, rule.obj)) continue;
      if (res === EXTENSIONS && rule.res !== EXTENSIONS && rule.act !== '*') continue; // model.ts's last clause
      if (rule.eft === 'deny') return rule;
      allowing ??= rule;
    }
    return allowing;
  };
}

/** The subject and every role within MAX_ROLE_DEPTH g links of it (breadth first). */
function reachable(subject: string, parents: ReadonlyMap<string, readonly string[]>): string[] {
  const seen = new Set([subject]);
  let frontier = [subject];
  for (let depth = 0; depth < MAX_ROLE_DEPTH && frontier.length > 0; depth++) {
    const next: string[] = [];
    for (const name of frontier) {
      for (const role of parents.get(name) ?? []) {
        if (!seen.has(role)) {
          seen.add(role);
          next.push(role);
        }
      }
    }
    frontier = next;
  }
  return [...seen];
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}
