/**
 * Secret references in configuration values: `$<secret>:<key>` reads a key of another Secret,
 * which must carry the part-of label; `$<key>` reads a key of svc-secret. Never a key svc keeps
 * for itself (own-secrets.ts), whichever way it is written. Values were base64 decoded once when
 * the Secret was read (manifests.ts), never again here.
 */
import { ownedBySvc } from './own-secrets.js';
import { PART_OF_LABEL, PART_OF_VALUE, SETTINGS_SECRET, type SecretObject } from './manifests.js';
import type { ScopedSink } from './problems.js';

export type SecretLookup = ReadonlyMap<string, SecretObject>;

const REFERENCE = /^\$([A-Za-z0-9._-]+)(?::([A-Za-z0-9._-]+))?$/;

export function isSecretReference(value: string): boolean {
  return value.startsWith('$');
}

/** The resolved value, or undefined after reporting why it cannot be resolved. */
export function resolveSecretReference(value: string, secrets: SecretLookup, sink: ScopedSink, path: readonly (string | number)[]): string | undefined {
  if (!isSecretReference(value)) return value;
  const match = REFERENCE.exec(value);
  if (match === null) {
    // Never the value itself: a `$` that was not meant as a reference is likely a secret typed in place.
    sink.add(path, 'is not a secret reference: use $<key> or $<secret>:<key>');
    return undefined;
  }
  const [, first, second] = match;
  const secretName = second === undefined ? SETTINGS_SECRET : (first ?? '');
  const key = second ?? first ?? '';
  // Refused before the Secret is even looked up: an editor learns nothing of svc's own keys.
  const owned = ownedBySvc(secretName, key);
  if (owned !== undefined) {
    sink.add(path, `references key '${key}' of Secret '${secretName}', which svc keeps for itself (${owned}); configuration may not read it`);
    return undefined;
  }
  const secret = secrets.get(secretName);
  if (secret === undefined) {
    sink.add(path, `references Secret '${secretName}', which does not exist`);
    return undefined;
  }
  if (secretName !== SETTINGS_SECRET && secret.labels[PART_OF_LABEL] !== PART_OF_VALUE) {
    sink.add(path, `references secret '${secretName}', which lacks the label ${PART_OF_LABEL}: ${PART_OF_VALUE}`);
    return undefined;
  }
  // Own keys only: `$toString` must not find Object.prototype's.
  if (!Object.hasOwn(secret.data, key)) {
    sink.add(path, `references key '${key}' of Secret '${secretName}', which has no such key`);
    return undefined;
  }
  return secret.data[key];
}

/**
 * Resolves every string starting with `$` anywhere inside a parsed YAML value. Returns the
 * value with references replaced, or undefined when any reference failed (each one reported).
 */
export function resolveAllReferences(value: unknown, secrets: SecretLookup, sink: ScopedSink, path: (string | number)[] = []): unknown {
  const { value: out, unresolved } = resolveForChecking(value, secrets, sink, path);
  return unresolved.length === 0 ? out : undefined;
}

/**
 * As resolveAllReferences, but the value comes back whole: a reference that failed (reported)
 * is left as UNRESOLVED (a non-empty string, so "required" does not fire as well), and its path is listed in `unresolved`. The caller checks the
 * rest of the value all the same, so that a bad reference does not hide the other problems of
 * the entry, and uses none of it when `unresolved` is not empty.
 */
export const UNRESOLVED = '<unresolved secret reference>';

export function resolveForChecking(value: unknown, secrets: SecretLookup, sink: ScopedSink, path: (string | number)[] = []): { value: unknown; unresolved: readonly (readonly (string | number)[])[] } {
  const unresolved: (string | number)[][] = [];
  // What is checked here is a map (an entry, a document): a reference standing for the whole of
  // it is left as written. Resolved, the "must be a map, not a string" that follows quoted the
  // Secret's value, and only values inside a map or list are marked as a Secret's (markReferences).
  if (typeof value === 'string') return { value, unresolved };
  return { value: walk(value, secrets, sink, path, unresolved), unresolved };
}

function walk(value: unknown, secrets: SecretLookup, sink: ScopedSink, path: (string | number)[], unresolved: (string | number)[][]): unknown {
  if (typeof value === 'string') {
    if (!isSecretReference(value)) return value;
    const resolved = resolveSecretReference(value, secrets, sink, path);
    if (resolved !== undefined) return resolved;
    unresolved.push(path);
    return UNRESOLVED;
  }
  if (Array.isArray(value)) {
    const out = value.map((item, i) => walk(item, secrets, sink, [...path, i], unresolved));
    markReferences(out, value);
    return out;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = walk(item, secrets, sink, [...path, key], unresolved);
    markReferences(out, value);
    return out;
  }
  return value;
}

/**
 * The keys of a resolved map or list whose value was a reference: a message about such a value
 * must not quote it (it is a Secret's), wherever the value is checked (zod-problems.ts).
 */
const fromSecrets = new WeakMap<object, ReadonlySet<string>>();

function markReferences(out: object, written: object): void {
  const keys = Object.entries(written).filter(([, item]) => typeof item === 'string' && isSecretReference(item)).map(([key]) => key);
  if (keys.length > 0) fromSecrets.set(out, new Set(keys));
}

/** Whether `container[key]` was read from a Secret (resolveForChecking). */
export function isFromSecret(container: object, key: string | number): boolean {
  return fromSecrets.get(container)?.has(String(key)) ?? false;
}

/** `container` without `key`, keeping which of its values were read from a Secret. */
export function withoutKey(container: Readonly<Record<string, unknown>>, key: string): Record<string, unknown> {
  const { [key]: _dropped, ...rest } = container;
  const marked = fromSecrets.get(container);
  if (marked !== undefined) fromSecrets.set(rest, marked);
  return rest;
}
