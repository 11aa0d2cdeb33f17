/**
 * What every connector's config.ts shares: the field schemas (URLs, PEM certificates, names) and
 * parseTypeConfig, which refuses `redirectURI`, resolves secret references, parses with a strict
 * schema and runs the checks that span fields, reporting every problem with its key path.
 *
 * Certificates are PEM text (or a secret reference to it) in configuration, never a file path:
 * the configuration lives in manifests, not on the server's disk (DESIGN §7). Where Dex takes
 * base64 PEM (`rootCAData`, `caData`), svc takes it too and decodes it here.
 */
import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import type { ScopedSink } from '../src/config/problems.js';
import { resolveForChecking } from '../src/config/secret-ref.js';
import { parseWith } from '../src/config/zod-problems.js';
import type { ParseInput } from './connector.js';

export const REDIRECT_URI_PROBLEM = 'must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream';

/** A key that must be there; zod's own sentence ("expected string, received undefined") reads worse. */
const required = (what: string) => (issue: { input: unknown }) => (issue.input === undefined ? 'required' : `must be ${what}`);

export const text = z.string({ error: required('a string') }).min(1, 'must not be empty');
export const flag = z.boolean({ error: required('true or false') });
export const textList = z.array(text, { error: required('a list of strings') });

export function isHttpUrl(value: string): boolean {
  return URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);
}

/** Connectors talk to these (or send browsers there): http(s) only, never javascript: or file:. */
export const httpUrl = z.string({ error: required('a string') }).refine(isHttpUrl, 'not an http(s) URL');

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** One or more PEM certificates, each of which parses (a truncated paste fails `validate`, not a login). */
export function isPemCertificates(value: string): boolean {
  const blocks = value.match(PEM_CERTIFICATE);
  if (blocks === null) return false;
  try {
    for (const block of blocks) new X509Certificate(block);
    return true;
  } catch {
    return false;
  }
}

/** Decoded base64 PEM, or undefined when the value is not base64 of a PEM certificate. */
export function decodeBase64Pem(value: string): string | undefined {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(value)) return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  return isPemCertificates(decoded) ? decoded : undefined;
}

// Never the value in the message: it may have come from a secret.
const NOT_PEM = 'must be PEM certificates (-----BEGIN CERTIFICATE-----) or a secret reference to them, never a file path';

/** PEM text with one or more certificates. */
export const pemCertificates = z.string({ error: required('a string') }).refine(isPemCertificates, NOT_PEM);

/** Base64 of PEM text (Dex's `rootCAData`, `caData`); the output is the PEM text. */
export const base64PemCertificates = z
  .string({ error: required('a string') })
  .transform((value, ctx) => {
    const pem = decodeBase64Pem(value);
    if (pem !== undefined) return pem;
    ctx.addIssue({ code: 'custom', message: 'must be base64 of PEM certificates, or a secret reference to it' });
    return z.NEVER;
  });

/** The resolved config map as written, for the checks that span fields. */
export type RawConfig = Readonly<Record<string, unknown>>;

/** Checks between fields, run even when a field is wrong so that one run names every problem. */
export type CrossCheck = (raw: RawConfig, at: ScopedSink) => void;

export function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a key is set to something other than null (YAML `key:` with no value reads as null). */
export function isSet(raw: RawConfig, key: string): boolean {
  return Object.hasOwn(raw, key) && raw[key] !== undefined && raw[key] !== null;
}

/**
 * The checked config, or undefined after reporting every problem to `input.at` (scoped at
 * `connectors[i].config`). Opens nothing and has no side effects.
 */
export function parseTypeConfig<T>(schema: z.ZodType<T>, input: ParseInput, crossCheck?: CrossCheck): T | undefined {
  const { at } = input;
  const before = at.count;
  if (!isMap(input.raw)) {
    at.add([], 'must be a map');
    return undefined;
  }
  const { redirectURI, ...raw } = input.raw;
  if (redirectURI !== undefined) at.add(['redirectURI'], REDIRECT_URI_PROBLEM);
  const { value: resolved, unresolved } = resolveForChecking(raw, input.secrets, at);
  if (!isMap(resolved)) return undefined;
  const parsed = parseWith(schema, resolved, at, unresolved);
  crossCheck?.(resolved, at.except(unresolved));
  return at.count === before ? parsed : undefined;
}

/** `a` and `b` name the same thing in two forms: at most one of them. */
export function atMostOne(raw: RawConfig, at: ScopedSink, a: string, b: string): void {
  if (isSet(raw, a) && isSet(raw, b)) at.add([b], `cannot be combined with ${a}: set one of them`);
}

/** A key Dex has and svc does not take, with the sentence saying what to do instead. */
export const refused = (message: string) => z.never({ error: message }).optional();
