/**
 * The claim rules applied to one login, in Kubernetes' order: each `claimValidationRules`
 * expression on `claims`, then `claimMappings` (each replaces the field the source gave), then
 * each `userValidationRules` expression on the `user` that results. A rule that gives false, and
 * an expression that fails (a missing claim, a wrong type, the cost bound, claims too large),
 * refuse the login with ClaimRuleRefused: fail closed, never a partial identity. What a mapping
 * makes is a name from outside like any other: the reserved-name rules (src/principal.ts) hold
 * for it where the identity is used.
 */
import { isCelList, type CelValue } from '@bufbuild/cel';
import { PermissionDenied } from '../errors.js';
import { celInput } from './cel-input.js';
import type { CelProgram } from './cel-program.js';
import { MAPPED_FIELDS, type ClaimRules, type MappedField, type ValidationRule } from './rules-config.js';

/** The identity the rules read as `user`, and give back after the mappings. */
export interface RuleUser {
  /** The stable id (an OIDC `sub`, a connector's user id); no mapping changes it. */
  readonly uid: string;
  readonly username: string;
  readonly email: string | undefined;
  readonly name: string | undefined;
  readonly groups: readonly string[];
}

/**
 * A login the rules refused. `message` is the rule's, for the person (never a claim value
 * unless the operator's message quotes one); `reason` names the rule and says why, for the log
 * and the audit trail.
 */
export class ClaimRuleRefused extends PermissionDenied {
  constructor(message: string, readonly reason: string) {
    super(message);
  }
}

/**
 * Whether `err` is a ClaimRuleRefused. By shape, not instanceof: a module graph loaded twice
 * (a connector loaded with import(), as connectors/errors.ts says) holds another copy of the class.
 */
export function isClaimRuleRefused(err: unknown): err is ClaimRuleRefused {
  return err instanceof Error && err.name === 'ClaimRuleRefused' && (err as { code?: unknown }).code === 'permission_denied' && typeof (err as { reason?: unknown }).reason === 'string';
}

const MAPPING_FAILED = 'the identity source\'s answer could not be turned into a user by the claim mappings';

/** The user after the rules; throws ClaimRuleRefused when a rule refuses or fails. */
export function applyClaimRules(rules: ClaimRules, claims: Readonly<Record<string, unknown>>, user: RuleUser): RuleUser {
  const userInput = (u: RuleUser): unknown => celInput({ uid: u.uid, username: u.username, email: u.email ?? '', name: u.name ?? '', groups: [...u.groups] }, 'user');
  let claimsInput: unknown;
  let before: unknown;
  try {
    claimsInput = celInput(claims);
    before = userInput(user);
  } catch (err: unknown) {
    // Past an input bound (./cel-input.ts): refused, never evaluated on part of the answer.
    throw new ClaimRuleRefused(rules.claimValidationRules[0]?.message ?? MAPPING_FAILED, `the claims cannot be evaluated: ${(err as Error).message}`);
  }
  for (const rule of rules.claimValidationRules) check(rule, { claims: claimsInput, user: before });
  let mapped = user;
  for (const field of MAPPED_FIELDS) {
    const program = rules.claimMappings[field];
    if (program !== undefined) mapped = { ...mapped, ...mappedField(field, program, { claims: claimsInput, user: before }) };
  }
  if (rules.userValidationRules.length > 0) {
    let after: unknown;
    try {
      after = userInput(mapped);
    } catch (err: unknown) {
      throw new ClaimRuleRefused(MAPPING_FAILED, `the mapped user cannot be evaluated: ${(err as Error).message}`);
    }
    for (const rule of rules.userValidationRules) check(rule, { claims: claimsInput, user: after });
  }
  return mapped;
}

function check(rule: ValidationRule, bindings: { readonly claims: unknown; readonly user: unknown }): void {
  const value = rule.program.evaluate(bindings);
  if (value instanceof Error) throw new ClaimRuleRefused(rule.message, `${rule.key} could not be evaluated: ${value.message}`);
  if (value !== true) throw new ClaimRuleRefused(rule.message, `${rule.key} gave ${typeof value === 'boolean' ? 'false' : 'a value that is not true or false'}`);
}

function mappedField(field: MappedField, program: CelProgram, bindings: { readonly claims: unknown; readonly user: unknown }): Partial<RuleUser> {
  const key = `claimMappings.${field}`;
  const value = program.evaluate(bindings);
  const refuse = (why: string): never => {
    throw new ClaimRuleRefused(MAPPING_FAILED, `${key} ${why}`);
  };
  if (value instanceof Error) return refuse(`could not be evaluated: ${value.message}`);
  if (field === 'groups') return { groups: groupsOf(value, refuse) };
  if (typeof value !== 'string') return refuse('did not give a string');
  if (field === 'username') return value.trim() === '' ? refuse('gave an empty name') : { username: value };
  // An empty email or name is none, as Kubernetes reads it.
  return { [field]: value === '' ? undefined : value };
}

function groupsOf(value: CelValue, refuse: (why: string) => never): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (!isCelList(value)) return refuse('did not give a string or a list of strings');
  const groups: string[] = [];
  for (const item of value) {
    if (typeof item !== 'string') return refuse('gave a list with something other than strings');
    if (item !== '') groups.push(item);
  }
  return [...new Set(groups)];
}
