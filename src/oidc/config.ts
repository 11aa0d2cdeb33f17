/**
 * `oidc.config` of svc-cm: an existing OIDC provider, with every field of the specification
 * and its default. svc follows the behaviour from 2.6.0 on: a token without an audience is
 * rejected unless skipAudienceCheckWhenTokenHasNoAudience is true.
 */
import { z } from 'zod';
import { isMap } from '../../connectors/config-schema.js';
import { NO_CLAIM_RULES, parseClaimRules, type CLAIM_RULE_KEYS, type ClaimRules } from '../claims/rules-config.js';
import { parseDuration } from '../lib/duration.js';
import type { ScopedSink } from '../config/problems.js';
import { resolveForChecking, type SecretLookup } from '../config/secret-ref.js';
import { parseYamlValue } from '../config/yaml-value.js';
import { parseWith } from '../config/zod-problems.js';

export const DEFAULT_REQUESTED_SCOPES = ['openid', 'profile', 'email', 'groups'] as const;

const url = z.string().refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'not an http(s) URL');

const claimRequest = z.strictObject({
  essential: z.boolean().optional(),
  value: z.string().optional(),
  values: z.array(z.string()).optional(),
});

const schema = z.strictObject({
  name: z.string().default('OIDC'),
  issuer: url,
  clientID: z.string().min(1),
  clientSecret: z.string().optional(),
  allowedAudiences: z.array(z.string().min(1)).default([]),
  skipAudienceCheckWhenTokenHasNoAudience: z.boolean().default(false),
  requestedScopes: z.array(z.string().min(1)).default([...DEFAULT_REQUESTED_SCOPES]),
  requestedIDTokenClaims: z.record(z.string(), claimRequest).default({}),
  cliClientID: z.string().min(1).optional(),
  enablePKCEAuthentication: z.boolean().default(false),
  enableUserInfoGroups: z.boolean().default(false),
  userInfoPath: z.string().startsWith('/', 'must be a path starting with /').optional(),
  userInfoCacheExpiration: z.string().refine((v) => parseDuration(v) !== undefined, 'not a duration (for example 5m)').optional(),
  logoutURL: z.string().min(1).optional(),
  rootCA: z.string().includes('-----BEGIN CERTIFICATE-----', { message: 'not a PEM certificate' }).optional(),
  // Checked and compiled by parseClaimRules (src/claims/), with their own key paths.
  claimValidationRules: z.unknown().optional(),
  claimMappings: z.unknown().optional(),
  userValidationRules: z.unknown().optional(),
}).superRefine((c, ctx) => {
  if (c.clientSecret === undefined && !c.enablePKCEAuthentication) {
    ctx.addIssue({ code: 'custom', path: ['clientSecret'], message: 'is required unless enablePKCEAuthentication is true' });
  }
});

export type OidcConfig = Readonly<Omit<z.infer<typeof schema>, (typeof CLAIM_RULE_KEYS)[number]>> & {
  /** allowedAudiences after its default: clientID and cliClientID when none were listed. */
  readonly audiences: readonly string[];
  /** claimValidationRules, claimMappings and userValidationRules, compiled (docs/claims.md). */
  readonly claimRules: ClaimRules;
};

/** `sink` is scoped at `svc-cm: oidc.config`; `serverUrl` (svc-cm's url) names the redirect URI svc sends. */
export function parseOidcConfig(text: string | undefined, secrets: SecretLookup, sink: ScopedSink, previous?: OidcConfig, serverUrl?: string): OidcConfig | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const yaml = parseYamlValue(text, sink);
  if (!yaml.ok) return previous;
  const before = sink.count;
  let value = yaml.value;
  if (typeof value === 'object' && value !== null && 'redirectURI' in value) {
    // Argo CD derives it from its url as svc does; what the operator needs is the URL itself.
    const base = serverUrl !== undefined && URL.canParse(serverUrl) ? serverUrl.replace(/\/+$/, '') : '<url>';
    sink.add(['redirectURI'], `is not a key here: svc sends '${base}/auth/callback' (or '${base}/pkce/verify' with enablePKCEAuthentication), from the url of svc-cm; register that URL at the provider`);
    const { redirectURI: _ignored, ...rest } = value as Record<string, unknown>;
    value = rest;
  }
  // Checked whole even when a reference fails, so that its other problems are reported too.
  const { value: resolved, unresolved } = resolveForChecking(value, secrets, sink);
  const parsed = parseWith(schema, resolved, sink, unresolved);
  const claimRules = isMap(resolved) ? parseClaimRules(resolved, sink, { idTokenClaims: true }) : NO_CLAIM_RULES;
  if (parsed === undefined || claimRules === undefined || sink.count > before) return previous;
  const { claimValidationRules: _v, claimMappings: _m, userValidationRules: _u, ...fields } = parsed;
  const audiences = fields.allowedAudiences.length > 0
    ? fields.allowedAudiences
    : [fields.clientID, ...(fields.cliClientID !== undefined ? [fields.cliClientID] : [])];
  return { ...fields, audiences, claimRules };
}
