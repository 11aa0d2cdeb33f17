/**
 * The claim rules' keys, as Kubernetes' AuthenticationConfiguration names them, for `oidc.config`
 * and for the `config` of every connector of `idp.config` (docs/claims.md):
 * `claimValidationRules`, `claimMappings` (username, email, name, groups) and
 * `userValidationRules`. Each expression is compiled here, when the configuration loads; one that
 * does not compile, or gives the wrong type for its key, is a problem at its key path with CEL's
 * message, and the entry holding it is not used.
 */
import { z } from 'zod';
import type { ScopedSink } from '../config/problems.js';
import { parseWith } from '../config/zod-problems.js';
import { CLAIM_RULE_KEYS } from './keys.js';
import { compileCel, type CelProgram, type Wanted } from './cel-program.js';

export { CLAIM_RULE_KEYS };
export const MAPPED_FIELDS = ['username', 'email', 'name', 'groups'] as const;
export type MappedField = (typeof MAPPED_FIELDS)[number];

/** At most this many rules of each kind: each costs every login a little. */
export const MAX_RULES = 64;

export interface ValidationRule {
  /** Where it stands, for the log: `claimValidationRules[0]`. */
  readonly key: string;
  readonly program: CelProgram;
  /** What the person is told when it refuses. */
  readonly message: string;
}

export interface ClaimRules {
  readonly claimValidationRules: readonly ValidationRule[];
  readonly claimMappings: Readonly<Partial<Record<MappedField, CelProgram>>>;
  readonly userValidationRules: readonly ValidationRule[];
}

export const NO_CLAIM_RULES: ClaimRules = { claimValidationRules: [], claimMappings: {}, userValidationRules: [] };

export function hasClaimRules(rules: ClaimRules): boolean {
  return rules.claimValidationRules.length > 0 || rules.userValidationRules.length > 0 || Object.keys(rules.claimMappings).length > 0;
}

const expression = z.string({ error: (issue) => (issue.input === undefined ? 'required' : 'must be a string') });
const rule = z.strictObject({ expression, message: z.string().min(1, 'must not be empty').optional() });
const mapping = z.strictObject({ expression });

/** The shape alone; the expressions are compiled after it. */
export const claimRulesSchema = z.strictObject({
  claimValidationRules: z.array(rule).max(MAX_RULES).optional(),
  claimMappings: z.strictObject({ username: mapping.optional(), email: mapping.optional(), name: mapping.optional(), groups: mapping.optional() }).optional(),
  userValidationRules: z.array(rule).max(MAX_RULES).optional(),
});

const WANTED: Record<MappedField, Wanted> = { username: 'string', email: 'string', name: 'string', groups: 'strings' };

export interface ClaimRulesOptions {
  /**
   * `claims` is an ID token's (oidc.config): a `username` or `email` mapping that reads
   * `claims.email` must have `claims.email_verified` checked, in its expression or in a
   * `claimValidationRules` expression, as Kubernetes' AuthenticationConfiguration requires;
   * else anyone who can set an unverified address upstream could take that name (issue 54).
   */
  readonly idTokenClaims?: boolean;
}

const READS_EMAIL = /\bclaims\s*(?:\.\s*\??\s*email\b|\[\s*["']email["']\s*\])/;
const READS_EMAIL_VERIFIED = /\bclaims\s*(?:\.\s*\??\s*email_verified\b|\[\s*["']email_verified["']\s*\])/;

/** The three keys of `raw` (other keys are not looked at), or undefined after reporting every problem to `at`. */
export function parseClaimRules(raw: Readonly<Record<string, unknown>>, at: ScopedSink, options: ClaimRulesOptions = {}): ClaimRules | undefined {
  const picked = Object.fromEntries(CLAIM_RULE_KEYS.filter((key) => Object.hasOwn(raw, key) && raw[key] !== null).map((key) => [key, raw[key]]));
  if (Object.keys(picked).length === 0) return NO_CLAIM_RULES;
  const before = at.count;
  const shape = parseWith(claimRulesSchema, picked, at);
  if (shape === undefined) return undefined;
  const compile = (path: readonly (string | number)[], text: string, wanted: Wanted): CelProgram | undefined => {
    const compiled = compileCel(text, wanted);
    if (compiled.ok) return compiled.program;
    at.add(path, compiled.message);
    return undefined;
  };
  const rules = (key: 'claimValidationRules' | 'userValidationRules'): ValidationRule[] =>
    (shape[key] ?? []).flatMap((r, i) => {
      const program = compile([key, i, 'expression'], r.expression, 'bool');
      return program === undefined ? [] : [{ key: `${key}[${i}]`, program, message: r.message ?? `the login does not meet the rule ${key}[${i}] of the identity source` }];
    });
  const claimValidationRules = rules('claimValidationRules');
  const claimMappings: Partial<Record<MappedField, CelProgram>> = {};
  for (const field of MAPPED_FIELDS) {
    const text = shape.claimMappings?.[field]?.expression;
    if (text === undefined) continue;
    const program = compile(['claimMappings', field, 'expression'], text, WANTED[field]);
    if (program !== undefined) claimMappings[field] = program;
  }
  if (options.idTokenClaims === true) {
    const checked = (shape.claimValidationRules ?? []).some((r) => READS_EMAIL_VERIFIED.test(r.expression));
    for (const field of ['username', 'email'] as const) {
      const text = shape.claimMappings?.[field]?.expression;
      if (text === undefined || !READS_EMAIL.test(text) || checked || READS_EMAIL_VERIFIED.test(text)) continue;
      at.add(['claimMappings', field, 'expression'], 'reads claims.email, so claims.email_verified must be checked too, in this expression or in a claimValidationRules expression (for example \'claims.email_verified == true\')');
      delete claimMappings[field];
    }
  }
  const userValidationRules = rules('userValidationRules');
  return at.count === before ? { claimValidationRules, claimMappings, userValidationRules } : undefined;
}

/** `raw` without the three keys: what a connector type's own schema checks. */
export function withoutClaimRules(raw: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(raw).filter(([key]) => !(CLAIM_RULE_KEYS as readonly string[]).includes(key)));
}
