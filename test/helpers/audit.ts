/** An audit trail that keeps every event, for tests that assert what was recorded. */
import type { AuditEvent, AuditTrail } from '../../src/audit/trail.js';
import { captureAuditEvent } from '../audit-capture.js';

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
      // Checked with every other test's lines: no secret, the schema (audit-capture.ts).
      captureAuditEvent(event);
    },
    of(action) {
      return events.filter((e) => e.action === action);
    },
  };
}
