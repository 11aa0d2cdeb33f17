/**
 * Which line (or default) decided a refusal, for the audit trail's `svc.rule`. Asked only after
 * a "no": the index it reads is built at the first refusal of a policy and never on the path of
 * an allowed request, and its answer is not cached (a refusal is rare, and a flood of them is
 * bounded by the rate limits in front).
 */
import { createGlobMatch } from './glob.js';
import { createDecisiveRule, type DecisiveRule, type PRule } from './indexed.js';
import type { PolicyRule } from './policy.js';

export type Explain = (subjects: readonly string[], resource: string, action: string, object: string) => string;

/** `rules`: the rules the enforcer decides with (built-in first); `narrowed`: a refused change keeps the policy narrowed (policy.ts). */
export function createExplain(rules: readonly PolicyRule[], defaultRole: string | undefined, narrowed: boolean): Explain {
  let decisive: DecisiveRule | undefined;
  return function explain(subjects, res, act, obj) {
    decisive ??= createDecisiveRule(rules, createGlobMatch());
    let allowedBy: PRule | undefined;
    for (const subject of subjects) {
      const rule = decisive(subject, res, act, obj);
      if (rule?.eft === 'deny') return `deny line: ${line(rule)}`;
      allowedBy ??= rule;
    }
    if (allowedBy !== undefined) {
      return narrowed ? `narrowed policy: ${line(allowedBy)} allows it, but a refused policy change keeps in force only what the kept and the new lines both allow` : `allowed by ${line(allowedBy)}`;
    }
    if (defaultRole === undefined) return 'default: no line matches the caller and policy.default is not set';
    const byDefault = decisive(defaultRole, res, act, obj);
    if (byDefault?.eft === 'deny') return `deny line of policy.default (${defaultRole}): ${line(byDefault)}`;
    return `default: no line matches the caller, and policy.default (${defaultRole}) does not allow it`;
  };
}

function line(rule: PRule): string {
  return `p, ${rule.sub}, ${rule.res}, ${rule.act}, ${rule.obj}, ${rule.eft}`;
}
