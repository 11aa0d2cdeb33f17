/**
 * Who a verified subject token is: `workload:<entry>:<subject>` and its groups. The username
 * is built here and only here, so a `workload:` subject can arise from no other login. Groups
 * come from claims, so they are names from outside: one that is reserved (reserved.ts: `role:`,
 * `workload:`, a local account's name) is dropped, and the drop is said in the log, so a claim
 * can never make a workload a role or a local account.
 */
import { claimAt, fillTemplate } from './claim-path.js';
import type { WorkloadIssuer } from './config.js';
import { reservedExternalName } from '../principal.js';
import { WorkloadRefused, type Claims } from './verify.js';

export const WORKLOAD_PREFIX = 'workload:';
/** The subject a template gives is bounded: it becomes an RBAC subject and a log field. */
export const MAX_SUBJECT_LENGTH = 256;
export const MAX_GROUPS = 100;
const MAX_GROUP_LENGTH = 256;
// Control characters would forge log lines or CSV policy matches.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

export interface WorkloadIdentity {
  readonly username: string;
  readonly groups: readonly string[];
  /** Groups left out, with why: for the log. */
  readonly dropped: readonly { readonly group: string; readonly reason: string }[];
}

export function identify(entry: WorkloadIssuer, claims: Claims, localAccounts: Iterable<string>): WorkloadIdentity {
  const subject = fillTemplate(entry.subject, claims);
  if ('missing' in subject) throw new WorkloadRefused('subject', `the subject template needs claim '${subject.missing}', which the token lacks or is not a string`);
  if (subject.value === '' || subject.value.length > MAX_SUBJECT_LENGTH || CONTROL.test(subject.value)) {
    throw new WorkloadRefused('subject', `the subject template gives an empty value, one longer than ${MAX_SUBJECT_LENGTH} characters or one with control characters`);
  }
  const locals = new Set(localAccounts);
  const groups = new Set<string>();
  const dropped: { group: string; reason: string }[] = [];
  for (const candidate of candidateGroups(entry, claims)) {
    if (candidate === '' || candidate.length > MAX_GROUP_LENGTH || CONTROL.test(candidate)) continue;
    const reason = reservedExternalName(candidate, locals);
    if (reason !== undefined) dropped.push({ group: candidate, reason });
    else if (groups.size < MAX_GROUPS) groups.add(candidate);
  }
  return { username: `${WORKLOAD_PREFIX}${entry.name}:${subject.value}`, groups: [...groups], dropped };
}

/** Templates whose claims are missing give no group (grants less); a list claim gives its strings. */
function candidateGroups(entry: WorkloadIssuer, claims: Claims): string[] {
  const out: string[] = [];
  for (const rule of entry.groups) {
    if ('template' in rule) {
      const filled = fillTemplate(rule.template, claims);
      if ('value' in filled) out.push(filled.value);
      continue;
    }
    const value = claimAt(claims, rule.claim);
    if (typeof value === 'string') out.push(value);
    else if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') out.push(v);
  }
  return out;
}

