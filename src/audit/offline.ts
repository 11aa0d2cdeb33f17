/**
 * The audit events of the offline `svc-server` commands: who ran them is the operating system
 * account (svc.operator), as no svc login stands behind a command run on the host or in the pod.
 * Without --audit-log the events go to stderr, and the command then says once what those JSON
 * lines are and where they could go (issue 52: an unexplained line looked like an error).
 */
import { userInfo } from 'node:os';
import { AUDIT_LOG_VARIABLE } from './open-sink.js';
import type { AuditEvent, AuditTrail } from './trail.js';

/** The account running this process; '' when the system cannot say (a uid without a passwd entry). */
export function operatorName(): string {
  try {
    return userInfo().username;
  } catch {
    return '';
  }
}

/** `event` with svc.command and svc.operator added. */
export function offlineEvent(command: string, event: AuditEvent): AuditEvent {
  return { ...event, svc: { ...event.svc, command, operator: operatorName() } };
}

/** The trail, counting what it is given: the note below is said only when a line was written. */
export function countingTrail(trail: AuditTrail): AuditTrail & { readonly recorded: () => number } {
  let recorded = 0;
  return {
    record(event) {
      recorded++;
      trail.record(event);
    },
    recorded: () => recorded,
  };
}

/** Said once on stderr after the command, when its events went there: what they are and where they could go. */
export function stderrAuditNote(recorded: number): string | undefined {
  if (recorded === 0) return undefined;
  const what = recorded === 1 ? 'the JSON line above is this command\'s audit event' : `the ${recorded} JSON lines above are this command's audit events`;
  return `${what} (docs/audit.md), written to stderr for want of an audit log: pass --audit-log FILE or set ${AUDIT_LOG_VARIABLE} to append them to the server's audit trail`;
}
