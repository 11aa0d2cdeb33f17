/**
 * The configured audit sink: `--audit-log FILE` (or SVC_AUDIT_LOG), else a descriptor (stdout for
 * the server, beside the operational log; stderr for the offline commands). A file is opened
 * before anything else starts, so a path svc cannot write is a start error naming it, and
 * reopened on SIGHUP for rotation (`mv` then SIGHUP, as logrotate does).
 */
import { svcVersion } from '../lib/version.js';
import { createAuditSink, type AuditSink, type AuditSinkLog } from './queue.js';
import { descriptorWriter, fileWriter } from './writers.js';

export const AUDIT_LOG_VARIABLE = 'SVC_AUDIT_LOG';

export interface OpenedAuditSink {
  readonly sink: AuditSink;
  /** The file the lines go to, or undefined for the descriptor. */
  readonly file: string | undefined;
  /** Reopens the file (a no-op without one). */
  reopen(): void;
}

export class AuditLogUnwritable extends Error {}

export async function openAuditSink(options: { readonly file: string | undefined; readonly fd: 1 | 2; readonly log: AuditSinkLog }): Promise<OpenedAuditSink> {
  const service = { name: 'svc', version: svcVersion() };
  const { file, log } = options;
  if (file === undefined || file === '') {
    return { sink: createAuditSink({ writer: descriptorWriter(options.fd), service, log }), file: undefined, reopen: () => undefined };
  }
  const writer = fileWriter(file, log);
  try {
    await writer.open();
  } catch (err: unknown) {
    throw new AuditLogUnwritable(`--audit-log (or ${AUDIT_LOG_VARIABLE}): cannot open '${file}' for appending: ${(err as Error).message}`, { cause: err });
  }
  return { sink: createAuditSink({ writer, service, log }), file, reopen: () => writer.reopen() };
}
