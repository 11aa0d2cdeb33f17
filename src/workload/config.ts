/**
 * `workload.config` of svc-cm: a YAML list of trusted workload token issuers (CI platforms,
 * Kubernetes clusters), each validated on its own. A bad entry is reported with its index and
 * key, and keeps its last good version (by name) when it had one; the good entries apply.
 * Parsing opens nothing, so `svc-server validate` runs it as is.
 */
import { z } from 'zod';
import type { ScopedSink } from '../config/problems.js';
import { resolveForChecking, type SecretLookup } from '../config/secret-ref.js';
import { parseYamlValue } from '../config/yaml-value.js';
import { parseWith } from '../config/zod-problems.js';
import { parseDuration } from '../lib/duration.js';
import { parseClaimPath, parseTemplate, type ClaimPath, type Template } from './claim-path.js';

export const DEFAULT_MAX_TOKEN_LIFETIME_MS = 3_600_000;
export const MAX_MAX_TOKEN_LIFETIME_MS = 24 * 3_600_000;
export const DEFAULT_SUBJECT = '{{sub}}';

/** A claim that must hold: equal to one value, or matching one of a list of globs (svc-rbac-cm's glob syntax). */
export interface ClaimCondition {
  readonly path: ClaimPath;
  /** The path as the operator wrote it, for messages. */
  readonly source: string;
  readonly equals?: string;
  readonly globs?: readonly string[];
}

export type GroupRule = { readonly template: Template } | { readonly claim: ClaimPath; readonly source: string };

export interface WorkloadIssuer {
  readonly name: string;
  readonly issuer: string;
  /** The key set's URL when the issuer has no discovery document. */
  readonly jwksURL?: string;
  /** PEM of CAs trusted beside the system roots, for the issuer's discovery and keys. */
  readonly rootCA?: string;
  readonly audiences: readonly string[];
  readonly claims: readonly ClaimCondition[];
  readonly subject: Template;
  readonly groups: readonly GroupRule[];
  readonly maxTokenLifetimeMs: number;
}

/** No ':' (it separates the parts of `workload:<name>:<subject>`). */
const ENTRY_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;

const httpsUrl = z.string().refine((value) => {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return url.protocol === 'https:' && url.hostname !== '' && url.search === '' && url.hash === '';
}, 'not an https:// URL without query or fragment (an issuer is only trusted over TLS)');

const template = z.string().superRefine((value, ctx) => {
  const parsed = parseTemplate(value);
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: `not a template: ${parsed}` });
});

const claimPath = z.string().superRefine((value, ctx) => {
  const parsed = parseClaimPath(value);
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: `not a claim path: it ${parsed}` });
});

const scalar = z.union([z.string(), z.number(), z.boolean()]).transform(String);

const entrySchema = z.strictObject({
  name: z.string().regex(ENTRY_NAME, 'letters, digits, ".", "_" and "-" only'),
  issuer: httpsUrl,
  jwksURL: httpsUrl.optional(),
  rootCA: z.string().includes('-----BEGIN CERTIFICATE-----', { message: 'not a PEM certificate' }).optional(),
  audiences: z.array(z.string().min(1, 'must not be empty'), 'is required: a list of the audiences svc accepts').min(1, 'must list at least one audience'),
  claims: z.record(z.string(), z.union([scalar, z.array(z.string().min(1)).min(1, 'must list at least one glob')])).default({}),
  subject: template.refine((v) => v.trim() !== '', 'must not be empty').default(DEFAULT_SUBJECT),
  groups: z.array(z.union([template, z.strictObject({ claim: claimPath })])).default([]),
  maxTokenLifetime: z.string().optional(),
}).superRefine((entry, ctx) => {
  for (const key of Object.keys(entry.claims)) {
    const parsed = parseClaimPath(key);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: ['claims', key], message: `'${key}' is not a claim path: it ${parsed}` });
  }
  if (entry.maxTokenLifetime !== undefined) {
    const ms = parseDuration(entry.maxTokenLifetime);
    if (ms === undefined || ms <= 0 || ms > MAX_MAX_TOKEN_LIFETIME_MS) {
      ctx.addIssue({ code: 'custom', path: ['maxTokenLifetime'], message: `'${entry.maxTokenLifetime}' is not a duration from 1s to 24h (for example 15m, 1h)` });
    }
  }
});

type RawEntry = z.infer<typeof entrySchema>;

/** Only called on a raw entry the schema accepted: every parse below succeeds. */
function toIssuer(raw: RawEntry): WorkloadIssuer {
  const claims: ClaimCondition[] = Object.entries(raw.claims).map(([source, want]) => ({
    path: parseClaimPath(source) as ClaimPath,
    source,
    ...(Array.isArray(want) ? { globs: want } : { equals: want }),
  }));
  const groups: GroupRule[] = raw.groups.map((g) =>
    typeof g === 'string' ? { template: parseTemplate(g) as Template } : { claim: parseClaimPath(g.claim) as ClaimPath, source: g.claim },
  );
  return {
    name: raw.name,
    issuer: raw.issuer,
    ...(raw.jwksURL !== undefined ? { jwksURL: raw.jwksURL } : {}),
    ...(raw.rootCA !== undefined ? { rootCA: raw.rootCA } : {}),
    audiences: raw.audiences,
    claims,
    subject: parseTemplate(raw.subject) as Template,
    groups,
    maxTokenLifetimeMs: raw.maxTokenLifetime === undefined ? DEFAULT_MAX_TOKEN_LIFETIME_MS : (parseDuration(raw.maxTokenLifetime) as number),
  };
}

/** The last good version of an invalid entry, by its name. */
function fallbackFor(entry: unknown, previous: readonly WorkloadIssuer[], at: ScopedSink): WorkloadIssuer | undefined {
  const name = typeof entry === 'object' && entry !== null ? (entry as { name?: unknown }).name : undefined;
  const last = typeof name === 'string' ? previous.find((p) => p.name === name) : undefined;
  at.add([], last !== undefined ? `entry '${last.name}' is invalid; its previous version stays in force` : 'entry is invalid and is ignored');
  return last;
}

/** `sink` is scoped at `svc-cm: workload.config`. When the YAML does not parse, the previous list stays whole. */
export function parseWorkloadConfig(
  text: string | undefined,
  secrets: SecretLookup,
  sink: ScopedSink,
  previous: readonly WorkloadIssuer[] = [],
): readonly WorkloadIssuer[] {
  if (text === undefined || text.trim() === '') return [];
  const parsed = parseYamlValue(text, sink);
  if (!parsed.ok) return previous;
  const doc = parsed.value;
  if (doc === null || doc === undefined) return [];
  if (!Array.isArray(doc)) {
    sink.add([], 'must be a YAML list of issuers (- name: …)');
    return previous;
  }
  const out: WorkloadIssuer[] = [];
  doc.forEach((entry: unknown, index) => {
    const at = sink.at(index);
    const { value: resolved, unresolved } = resolveForChecking(entry, secrets, at);
    const checked = parseWith(entrySchema, resolved, at, unresolved);
    const raw = unresolved.length === 0 ? checked : undefined;
    const config = raw !== undefined ? toIssuer(raw) : fallbackFor(entry, previous, at);
    if (config === undefined) return;
    const sameName = out.find((o) => o.name === config.name);
    if (sameName !== undefined) {
      at.add(['name'], `'${config.name}' is defined twice; the first one is used`);
      return;
    }
    const sameIssuer = out.find((o) => sameIssuerUrl(o.issuer, config.issuer));
    if (sameIssuer !== undefined) {
      at.add(['issuer'], `'${config.issuer}' is already the issuer of '${sameIssuer.name}': one entry per issuer (put every rule for it in that entry); this one is ignored`);
      return;
    }
    out.push(config);
  });
  return out;
}

/** Issuers compare as strings, as OIDC says, except for a trailing slash operators add or drop. */
export function sameIssuerUrl(a: string, b: string): boolean {
  return a.replace(/\/$/, '') === b.replace(/\/$/, '');
}
