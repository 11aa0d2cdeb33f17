/**
 * The audit trail's interface: one event per security decision (docs/audit.md). Features record
 * events here and know nothing of where they go or of the schema's field names; the sink
 * (stdout beside the operational log, or a file) turns an event into one ECS line.
 *
 * Never put a password, token, code, secret or a secret's hash in an event: a token is named by
 * its id. record() never blocks and never throws: a stalled sink drops and counts.
 */

/** ECS `event.category` values svc uses. */
export type AuditCategory = 'authentication' | 'iam' | 'configuration' | 'session' | 'web';
/** ECS `event.type` values svc uses. Authorization refusals are `denied`, not an outcome of failure. */
export type AuditType = 'start' | 'end' | 'info' | 'creation' | 'deletion' | 'change' | 'denied' | 'allowed';
/** ECS `event.outcome`. */
export type AuditOutcome = 'success' | 'failure' | 'unknown';

/** Who the event is about (ECS `user.*`). */
export interface AuditUser {
  /** ECS user.name: the display name, or the account name for local accounts. */
  readonly name?: string;
  /** ECS user.id: the stable id there (as Svc-Username): a local account's name, an SSO `sub`, a workload's name. */
  readonly id?: string;
  /** ECS user.domain: who vouches for `id` (person.ts): `svc` (local), the SSO provider's issuer, `svc:workload`. */
  readonly domain?: string;
  /** ECS user.roles. */
  readonly roles?: readonly string[];
  /** ECS user.group.name: the groups used for the decision. */
  readonly groups?: readonly string[];
}

/** Where the request came from (ECS source.ip, user_agent.original, http.request.id). */
export interface AuditSource {
  readonly ip?: string;
  readonly userAgent?: string;
  readonly requestId?: string;
}

/** svc's own fields, written under `svc.*` (connector, clientId, extension, project, rule, object, hashes…). */
export type AuditDetails = Readonly<Record<string, string | number | boolean | readonly string[] | undefined>>;

export interface AuditEvent {
  readonly category: AuditCategory;
  readonly type: AuditType;
  /** svc's own verb, kebab-case: `login`, `logout`, `token-created`, `rights-refused`… */
  readonly action: string;
  readonly outcome: AuditOutcome;
  /** Why, for failures and refusals (ECS event.reason). */
  readonly reason?: string;
  readonly user?: AuditUser;
  readonly source?: AuditSource;
  readonly svc?: AuditDetails;
  /** The trace of the request that recorded it (ECS trace.id, span.id), when tracing is on. */
  readonly trace?: { readonly traceId: string; readonly spanId: string };
}

export interface AuditTrail {
  /** Queues the event for the sink; never blocks, never throws. */
  record(event: AuditEvent): void;
  /** Events the sink dropped because it could not keep up (svc_audit_events_dropped_total); absent for trails that never drop. */
  readonly dropped?: () => number;
}

/** A trail that adds the active span's ids to each event that has none, then records it in `trail`. */
export function withTraceIds(trail: AuditTrail, ids: () => AuditEvent['trace']): AuditTrail {
  return {
    record(event) {
      const trace = event.trace ?? ids();
      trail.record(trace === undefined ? event : { ...event, trace });
    },
    ...(trail.dropped !== undefined ? { dropped: trail.dropped } : {}),
  };
}

/** Records nothing: for offline code paths and tests that do not look at the trail. */
export const NO_AUDIT: AuditTrail = { record() {} };
