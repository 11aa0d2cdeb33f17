/**
 * The built-in roles, always loaded before the operator's policy (as Argo CD's
 * `assets/builtin-policy.csv`). Unlike Argo CD, `role:admin` also gets `extensions` (Argo's
 * admin has no invoke right, reference/argocd.md §8.4).
 */
import type { PolicyRule } from './policy.js';

export const ROLE_ADMIN = 'role:admin';
export const ROLE_READONLY = 'role:readonly';

/** The resources this product checks, with the actions each one uses. */
export const RESOURCES = {
  accounts: ['get', 'update'],
  extensions: ['*', 'get', 'post', 'put', 'patch', 'delete', 'head', 'options'],
  applications: ['get', 'create', 'update', 'delete', 'sync'],
  clusters: ['get', 'create', 'update', 'delete'],
  projects: ['get', 'create', 'update', 'delete'],
  logs: ['get'],
  /** `p, <subject>, tokens, create, self, allow`: SSO users may make personal API tokens (src/ssotokens/). */
  tokens: ['create'],
} as const satisfies Record<string, readonly string[]>;

export type Resource = keyof typeof RESOURCES;

export const BUILTIN_RULES: readonly PolicyRule[] = [
  { kind: 'p', sub: ROLE_READONLY, res: '*', act: 'get', obj: '*', eft: 'allow' },
  { kind: 'p', sub: ROLE_ADMIN, res: '*', act: '*', obj: '*', eft: 'allow' },
  { kind: 'g', member: ROLE_ADMIN, role: ROLE_READONLY },
  // The local `admin` account (DESIGN §3: "policy role:admin").
  { kind: 'g', member: 'admin', role: ROLE_ADMIN },
];
