/**
 * `oidc.config` of svc-cm: an existing OIDC provider, with every field of the specification
 * and its default. svc follows the behaviour from 2.6.0 on: a token without an audience is
 * rejected unless skipAudienceCheckWhenTokenHasNoAudience is true.
 */
import { z } from 'zod';
import { parseDuration } from '../lib/duration.js';
import type { ScopedSink } from '../config/problems.js';
import { resolveAllReferences, type SecretLookup } from '../config/secret-ref.js';
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
}).superRefine((c, ctx) => {
  if (c.clientSecret === undefined && !c.enablePKCEAuthentication) {
    ctx.addIssue({ code: 'custom', path: ['clientSecret'], message: 'is required unless enablePKCEAuthentication is true' });
  }
});

export type OidcConfig = Readonly<z.infer<typeof schema>> & {
  /** allowedAudiences after its default: clientID and cliClientID when none were listed. */
  readonly audiences: readonly string[];
};

/** `sink` is scoped at `svc-cm: oidc.config`. */
export function parseOidcConfig(text: string | undefined, secrets: SecretLookup, sink: ScopedSink, previous?: OidcConfig): OidcConfig | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const yaml = parseYamlValue(text, sink);
  if (!yaml.ok) return previous;
  const resolved = resolveAllReferences(yaml.value, secrets, sink);
  if (resolved === undefined) return previous;
  const parsed = parseWith(schema, resolved, sink);
  if (parsed === undefined) return previous;
  const audiences = parsed.allowedAudiences.length > 0
    ? parsed.allowedAudiences
    : [parsed.clientID, ...(parsed.cliClientID !== undefined ? [parsed.cliClientID] : [])];
  return { ...parsed, audiences };
}
