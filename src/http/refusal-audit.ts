/**
 * The audit event of a rights refusal (`rights-refused`, type denied), for the API's error
 * middleware and the extension gateway alike: the subject, resource, action, object and the line
 * or default that decided. Only a PermissionDenied that carries a rights decision is recorded;
 * everything else that fails a request is not an authorization decision.
 */
import type { IncomingMessage } from 'node:http';
import type { AuditTrail } from '../audit/trail.js';
import { PermissionDenied } from '../errors.js';
import { personOf } from '../person.js';
import { auditTokenIdOf } from './audit-caller.js';
import { auditSourceOf } from './audit-source.js';
import type { TrustedProxies } from './client-address.js';

export interface RefusalAudit {
  readonly audit: AuditTrail;
  readonly trustedProxies: TrustedProxies;
}

export function auditRefusal(deps: RefusalAudit | undefined, err: unknown, req: IncomingMessage, requestId: string, via: 'api' | 'proxy'): void {
  if (deps === undefined || !(err instanceof PermissionDenied) || err.decision === undefined) return;
  const { principal, subjects, resource, action, object, rule } = err.decision;
  const person = personOf(principal);
  deps.audit.record({
    category: 'web',
    type: 'denied',
    action: 'rights-refused',
    // The check itself worked: a refusal is the type `denied`, not an outcome of failure (ECS).
    outcome: 'success',
    reason: rule,
    user: { name: principal.displayName ?? principal.username, id: person.subject, domain: person.issuer, groups: subjects.slice(1) },
    source: auditSourceOf(req, requestId, deps.trustedProxies),
    svc: { via, subject: subjects[0] ?? principal.username, resource, action: action, object, rule, tokenKind: principal.kind, tokenId: auditTokenIdOf(principal), issuer: principal.issuer },
  });
}
