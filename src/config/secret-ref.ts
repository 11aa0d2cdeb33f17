/**
 * Secret references in configuration values: `$<secret>:<key>` reads a key of another Secret,
 * which must carry the part-of label; `$<key>` reads a key of svc-secret. Values were base64
 * decoded once when the Secret was read (manifests.ts), never again here.
 */
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
  // Names from the value are shown masked: a password that starts with `$` reads as a reference.
  const secret = secrets.get(secretName);
  if (secret === undefined) {
    sink.add(path, `references a secret that does not exist (${masked(secretName)})`);
    return undefined;
  }
  if (secretName !== SETTINGS_SECRET && secret.labels[PART_OF_LABEL] !== PART_OF_VALUE) {
    sink.add(path, `references secret '${secretName}', which lacks the label ${PART_OF_LABEL}: ${PART_OF_VALUE}`);
    return undefined;
  }
  // Own keys only: `$toString` must not find Object.prototype's.
  if (!Object.hasOwn(secret.data, key)) {
    sink.add(path, `references a key of secret '${secretName}' that does not exist (${masked(key)})`);
    return undefined;
  }
  return secret.data[key];
}

/** Enough to find a typo in one's own config, not enough to give a secret away. */
function masked(text: string): string {
  return `'${text.slice(0, 2)}…', ${text.length} characters`;
}

/**
 * Resolves every string starting with `$` anywhere inside a parsed YAML value. Returns the
 * value with references replaced, or undefined when any reference failed (each one reported).
 */
export function resolveAllReferences(value: unknown, secrets: SecretLookup, sink: ScopedSink, path: (string | number)[] = []): unknown {
  const before = sink.count;
  const out = walk(value, secrets, sink, path);
  return sink.count === before ? out : undefined;
}

function walk(value: unknown, secrets: SecretLookup, sink: ScopedSink, path: (string | number)[]): unknown {
  if (typeof value === 'string') return isSecretReference(value) ? resolveSecretReference(value, secrets, sink, path) : value;
  if (Array.isArray(value)) return value.map((item, i) => walk(item, secrets, sink, [...path, i]));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = walk(item, secrets, sink, [...path, key]);
    return out;
  }
  return value;
}
