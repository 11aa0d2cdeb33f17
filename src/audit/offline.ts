/**
 * The audit events of the offline `svc-server` commands: who ran them is the operating system
 * account (svc.operator), as no svc login stands behind a command run on the host or in the pod.
 */
import { userInfo } from 'node:os';
import type { AuditEvent } from './trail.js';

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
