/**
 * The reserved-name rule for names from outside, as the workload feature applies it to the
 * groups its claims give: a name is reserved when it starts with `role:` or `workload:`
 * (case-insensitively, after trimming) or equals a local account's name (`admin` always).
 * The SSO side exports the same check from src/principal.ts; this copy keeps the workload
 * feature self-contained until both use the one there.
 */
import { ADMIN } from '../accounts/config.js';

const RESERVED_PREFIXES = ['role:', 'workload:'] as const;

/** Why the name is reserved, or undefined when an outside name may be used as an RBAC subject. */
export function reservedExternalName(name: string, localAccountNames: readonly string[]): string | undefined {
  const folded = name.trim().toLowerCase();
  for (const prefix of RESERVED_PREFIXES) if (folded.startsWith(prefix)) return `it starts with the reserved prefix '${prefix}'`;
  // Local names are lower-case; `Admin` is refused too, so no spelling of a local name gets through.
  if (folded === ADMIN || localAccountNames.includes(folded)) return `it is the name of the local account '${folded}'`;
  return undefined;
}
