/** An audit trail that keeps every event, for tests that assert what was recorded. */
import type { AuditEvent, AuditTrail } from '../../src/audit/trail.js';

export interface CollectedAudit extends AuditTrail {
  readonly events: AuditEvent[];
  /** The events of one action, in order. */
  of(action: string): AuditEvent[];
}

export function collectAudit(): CollectedAudit {
  const events: AuditEvent[] = [];
  return {
    events,
    record(event) {
      events.push(event);
    },
    of(action) {
      return events.filter((e) => e.action === action);
    },
  };
}
