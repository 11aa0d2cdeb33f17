/**
 * Validates audit lines against docs/audit.schema.json with ajv (pinned dev dependency): for any
 * test that produces audit events, from a collected trail or from the lines a sink wrote.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { toEcs } from '../../src/audit/ecs.js';
import type { AuditEvent } from '../../src/audit/trail.js';

const SCHEMA_FILE = new URL('../../docs/audit.schema.json', import.meta.url);
const validate = new Ajv({ allErrors: true, strict: true }).compile(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as object);

/** The ECS object of one line; throws naming every schema problem when it does not conform. */
export function validAuditLine(line: string): Record<string, unknown> {
  const parsed = JSON.parse(line) as unknown;
  if (!validate(parsed)) throw new Error(`audit line does not match docs/audit.schema.json: ${JSON.stringify(validate.errors)}\n${line}`);
  return parsed as Record<string, unknown>;
}

/** An event as the sink would write it, validated; returns the ECS object. */
export function validAuditEvent(event: AuditEvent): Record<string, unknown> {
  return validAuditLine(JSON.stringify(toEcs(event, Date.now(), { name: 'svc', version: '0.0.0-test' })));
}

/** Every line of a sink's output (blank lines ignored), validated. */
export function validAuditLines(text: string): Record<string, unknown>[] {
  return text.split('\n').filter((l) => l !== '').map(validAuditLine);
}
