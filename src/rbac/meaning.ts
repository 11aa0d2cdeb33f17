/**
 * Rights lines that parse but cannot do what they seem to, said as warnings (validate prints
 * them, the server logs them; neither refuses them, as they grant nothing): a resource or an
 * action svc never checks (the list `can-i` knows, builtin.ts), Argo CD's extension object
 * (without a project; its action `invoke` is refused by policy.ts as an unknown method), a role that no `p` line gives anything, and a `g`
 * member no caller can ever be (a name reserved for svc's own, in another case or form).
 */
import { closest } from '../config/key-hints.js';
import type { ScopedSink } from '../config/problems.js';
import { reservedExternalName, type LocalAccountNames } from '../principal.js';
import { BUILTIN_RULES, RESOURCES } from './builtin.js';
import { parsePolicyCsv, type PolicyRule } from './policy.js';

const GLOB = /[*?{[]/;

/** One CSV text (`policy.csv` or an overlay) with its sink (scoped at its key). */
export interface PolicyText {
  readonly text: string;
  readonly sink: ScopedSink;
}

export function warnAboutMeaning(texts: readonly PolicyText[], accounts: LocalAccountNames): void {
  const numbered = texts.flatMap(({ text, sink }) => text.split('\n').flatMap((line, index) => {
    const [rule] = parsePolicyCsv(line).rules;
    return rule === undefined ? [] : [{ rule, at: sink.at(`line ${index + 1}`) }];
  }));
  const all = [...BUILTIN_RULES, ...numbered.map((n) => n.rule)];
  const granting = new Set(all.flatMap((r) => (r.kind === 'p' ? [r.sub] : [])));
  // A role gets rights from its own p lines or from a role it is a member of.
  const roleOf = new Map<string, string[]>();
  for (const r of all) if (r.kind === 'g') roleOf.set(r.member, [...(roleOf.get(r.member) ?? []), r.role]);
  const hasRights = (role: string, depth = 0): boolean => granting.has(role) || (depth < 10 && (roleOf.get(role) ?? []).some((r) => hasRights(r, depth + 1)));
  for (const { rule, at } of numbered) {
    if (rule.kind === 'p') warnAboutP(rule, at);
    else warnAboutG(rule, at, hasRights, accounts);
  }
}

function warnAboutP(rule: PolicyRule & { kind: 'p' }, at: ScopedSink): void {
  const resources = Object.keys(RESOURCES);
  if (rule.res !== '*' && !GLOB.test(rule.res) && !Object.hasOwn(RESOURCES, rule.res)) {
    const near = closest(rule.res, resources);
    at.warn([], `resource '${rule.res}' is not one svc checks (${resources.join(', ')}): this line grants nothing${near !== undefined ? `; did you mean '${near}'?` : ''}`);
    return;
  }
  if (rule.res === 'extensions') {
    if (!rule.obj.includes('/') && rule.obj !== '*') {
      at.warn([], `the object of an extensions line is <project>/<extension>: '${rule.obj}' matches no call; write '*/${rule.obj}' for every project`);
    }
    return;
  }
  const actions: readonly string[] = (RESOURCES as Readonly<Record<string, readonly string[]>>)[rule.res] ?? [];
  if (rule.res !== '*' && !GLOB.test(rule.res) && rule.act !== '*' && !GLOB.test(rule.act) && !actions.includes(rule.act)) {
    const near = closest(rule.act, actions);
    at.warn([], `action '${rule.act}' is not one svc checks on ${rule.res} (${actions.join(', ')}): this line grants nothing${near !== undefined ? `; did you mean '${near}'?` : ''}`);
  }
}

function warnAboutG(rule: PolicyRule & { kind: 'g' }, at: ScopedSink, hasRights: (role: string) => boolean, accounts: LocalAccountNames): void {
  if (!hasRights(rule.role)) at.warn([], `role '${rule.role}' has no p line (nor a role with one): its members get nothing from it`);
  const member = rule.member;
  // Exactly svc's own names are fine: a local account, a role (inheritance), a workload subject.
  if (member.startsWith('role:') || member.startsWith('workload:') || member === 'admin' || accounts.has(member)) return;
  const reserved = reservedExternalName(member, accounts);
  if (reserved !== undefined) at.warn([], `'${member}' can never match: a single sign-on name like it is not used for rights (${reserved}), and local account names are lower-case`);
}
