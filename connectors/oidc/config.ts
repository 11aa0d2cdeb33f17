/**
 * The `oidc` connector's config: Dex's keys (dex.md §2.5), checked strictly. Differences from
 * Dex: `redirectURI` is refused (the callback is always `<url>/api/idp/callback`); CAs are PEM
 * text (`rootCA`, the name every svc connector uses, or Dex's list `rootCAs`, whose items may also
 * be base64 PEM), never file paths; certificate checks are switched off only by svc-cm's
 * `oidc.tls.insecure.skip.verify`, for every provider at once, so `insecureSkipVerify` is refused.
 */
import { z } from 'zod';
import type { ParseInput } from '../connector.js';
import { decodeBase64Pem, flag, httpUrl, isPemCertificates, isSet, parseTypeConfig, pemCertificates, refused, text, textList, type CrossCheck } from '../config-schema.js';

/** Asked for besides `openid`, which is always asked for. */
export const DEFAULT_OIDC_SCOPES: readonly string[] = ['profile', 'email'];
export const DEFAULT_USER_ID_KEY = 'sub';
export const DEFAULT_USER_NAME_KEY = 'name';
/** Sent only when the client asked for offline_access (with access_type=offline), as Dex does; '' sends none. */
export const DEFAULT_PROMPT_TYPE = 'consent';
export const PKCE_CHALLENGES = ['S256', 'plain'] as const;

const pemOrBase64Pem = z.string({ error: 'must be a string' }).transform((value, ctx) => {
  const pem = isPemCertificates(value) ? value : decodeBase64Pem(value);
  if (pem !== undefined) return pem;
  ctx.addIssue({ code: 'custom', message: 'must be PEM certificates or base64 of them (or a secret reference), never a file path' });
  return z.NEVER;
});

const regex = text.refine((value) => {
  try {
    new RegExp(value, 'u');
    return true;
  } catch {
    return false;
  }
}, 'not a valid regular expression');

const claimMapping = z.strictObject({
  preferred_username: text.optional(),
  email: text.optional(),
  groups: text.optional(),
});

const claimModifications = z.strictObject({
  /** Joins string claims into one extra group. */
  newGroupFromClaims: z
    .array(z.strictObject({ claims: textList, delimiter: z.string().default(':'), clearDelimiter: flag.default(false), prefix: z.string().optional() }))
    .optional(),
  /** Keeps only the groups this matches (Dex ignores a bad expression; svc reports it). */
  filterGroupClaims: z.strictObject({ groupsFilter: regex }).optional(),
  modifyGroupNames: z.strictObject({ prefix: z.string().optional(), suffix: z.string().optional() }).optional(),
});

const discoveryOverrides = z.strictObject({
  tokenURL: httpUrl.optional(),
  authURL: httpUrl.optional(),
  jwksURL: httpUrl.optional(),
  userInfoURL: httpUrl.optional(),
  deviceAuthURL: httpUrl.optional(),
  endSessionURL: httpUrl.optional(),
});

export const oidcConfigSchema = z.strictObject({
  /** Discovery at `<issuer>/.well-known/openid-configuration`; the document's issuer must match. */
  issuer: httpUrl,
  /** Also accept a discovery document whose issuer is this (Azure, Oracle). */
  issuerAlias: text.optional(),
  clientID: text,
  clientSecret: text,
  scopes: textList.default([...DEFAULT_OIDC_SCOPES]),
  /** Send the client secret in the token request body; unset: detected. */
  basicAuthUnsupported: flag.optional(),
  /** Added to the system roots. */
  rootCA: pemCertificates.optional(),
  rootCAs: z.array(pemOrBase64Pem).optional(),
  insecureSkipVerify: refused('is not taken per connector: oidc.tls.insecure.skip.verify in svc-cm switches certificate checks off'),
  /** Groups from the provider are ignored unless this and getUserInfo are true (SPEC rule 2). */
  insecureEnableGroups: flag.default(false),
  /** With insecureEnableGroups: the user must be in one of these, and groups are filtered to them. */
  allowedGroups: textList.optional(),
  /** A missing email_verified claim counts as verified. */
  insecureSkipEmailVerified: flag.default(false),
  /** Merge the user-info endpoint's claims into the ID token's; groups need it (with insecureEnableGroups). */
  getUserInfo: flag.default(false),
  userIDKey: text.default(DEFAULT_USER_ID_KEY),
  userNameKey: text.default(DEFAULT_USER_NAME_KEY),
  /** Claims to read when the standard one is missing (or always, with overrideClaimMapping). */
  claimMapping: claimMapping.optional(),
  overrideClaimMapping: flag.default(false),
  claimModifications: claimModifications.optional(),
  promptType: z.string({ error: 'must be a string' }).default(DEFAULT_PROMPT_TYPE),
  acrValues: textList.optional(),
  /** Unset: S256 when the provider lists it, else plain, else none. */
  pkceChallenge: z.enum(PKCE_CHALLENGES).optional(),
  /** Replace discovered endpoints (risky: logged when the connector is built). */
  providerDiscoveryOverrides: discoveryOverrides.optional(),
  hostedDomains: refused('was removed from Dex: restrict users with allowedGroups, or at the provider'),
});

export type OidcConnectorConfig = Readonly<z.output<typeof oidcConfigSchema>>;

const checkOidcConfig: CrossCheck = (raw, at) => {
  // Dex would silently ignore the restriction: anyone could log in while the operator thinks not.
  if (isSet(raw, 'allowedGroups') && raw['insecureEnableGroups'] !== true) {
    at.add(['allowedGroups'], 'needs insecureEnableGroups: true (groups are ignored without it, so nobody would be restricted)');
  } else if (isSet(raw, 'allowedGroups') && raw['getUserInfo'] !== true) {
    // Groups need both switches (SPEC rule 2): without getUserInfo nobody would have a group, so nobody could log in.
    at.add(['allowedGroups'], 'needs getUserInfo: true as well (groups are read only with both insecureEnableGroups and getUserInfo)');
  }
};

/** The checked config, or undefined after reporting every problem to `input.at`. */
export function parseOidcConnectorConfig(input: ParseInput): OidcConnectorConfig | undefined {
  return parseTypeConfig(oidcConfigSchema, input, checkOidcConfig);
}
