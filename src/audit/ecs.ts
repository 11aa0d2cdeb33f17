/**
 * One audit event as one ECS line (docs/audit.md, docs/audit.schema.json). Built only here, in
 * the sink, after the request is answered: features hand over a small AuditEvent and never pay
 * for the field names, the timestamp's text or JSON.stringify.
 */
import type { AuditEvent } from './trail.js';

/** The ECS release whose field names the lines use. */
export const ECS_VERSION = '8.11.0';
/** svc.audit.version: a change that renames or removes a field is a new version (docs/audit.md). */
export const AUDIT_SCHEMA_VERSION = '1';
/** The operational log's logger name for audit lines, so a pipeline reading stdout can route them. */
export const AUDIT_LOGGER = 'audit';

export interface AuditService {
  readonly name: string;
  readonly version: string;
}

type Json = string | number | boolean | readonly string[] | JsonObject;
interface JsonObject {
  [key: string]: Json;
}

/** The ECS object of one event; `at` is when it was recorded (milliseconds since the epoch). */
export function toEcs(event: AuditEvent, at: number, service: AuditService): JsonObject {
  const line: JsonObject = {
    '@timestamp': new Date(at).toISOString(),
    'log.logger': AUDIT_LOGGER,
    ecs: { version: ECS_VERSION },
    event: eventFields(event),
    service: { name: service.name, version: service.version },
  };
  const user = userFields(event);
  if (user !== undefined) line['user'] = user;
  const { source } = event;
  if (source?.ip !== undefined) line['source'] = { ip: source.ip };
  if (source?.userAgent !== undefined) line['user_agent'] = { original: source.userAgent };
  if (source?.requestId !== undefined) line['http'] = { request: { id: source.requestId } };
  if (event.trace !== undefined) {
    line['trace'] = { id: event.trace.traceId };
    line['span'] = { id: event.trace.spanId };
  }
  line['svc'] = { ...definedOnly(event.svc), audit: { version: AUDIT_SCHEMA_VERSION } };
  return line;
}

function eventFields(event: AuditEvent): JsonObject {
  const fields: JsonObject = { kind: 'event', category: [event.category], type: [event.type], action: event.action, outcome: event.outcome };
  if (event.reason !== undefined) fields['reason'] = event.reason;
  return fields;
}

function userFields({ user }: AuditEvent): JsonObject | undefined {
  if (user === undefined) return undefined;
  const fields: JsonObject = {};
  if (user.name !== undefined) fields['name'] = user.name;
  if (user.id !== undefined) fields['id'] = user.id;
  if (user.domain !== undefined) fields['domain'] = user.domain;
  if (user.roles !== undefined) fields['roles'] = user.roles;
  if (user.groups !== undefined) fields['group'] = { name: user.groups };
  return Object.keys(fields).length > 0 ? fields : undefined;
}

function definedOnly(details: AuditEvent['svc']): JsonObject {
  const out: JsonObject = {};
  if (details === undefined) return out;
  for (const [key, value] of Object.entries(details)) if (value !== undefined && key !== 'audit') out[key] = value;
  return out;
}
