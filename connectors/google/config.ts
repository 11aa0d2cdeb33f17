/**
 * The `google` connector's config: Dex's keys (connector/google), checked strictly. Differences
 * from Dex: `redirectURI` is refused (the callback is always `<url>/api/idp/callback`); the
 * service account's key is the JSON key file's content in a Secret (`serviceAccountKey`), never a
 * file path (`serviceAccountFilePath` is refused), and must be a secret reference; Dex's older
 * single `adminEmail` is refused for `domainToAdminEmail` (with `*` for every domain).
 *
 * `issuer`, `directoryURL` and `rootCA` are svc's: Google's own by default, another only for a
 * stand-in or an egress proxy in front of Google.
 */
import { z } from 'zod';
import { isFromSecret } from '../../src/config/secret-ref.js';
import type { ParseInput } from '../connector.js';
import { flag, httpUrl, isSet, parseTypeConfig, pemCertificates, refused, text, textList, type CrossCheck } from '../config-schema.js';
import { readServiceAccountKey } from './service-account.js';

export const GOOGLE_ISSUER = 'https://accounts.google.com';
export const GOOGLE_DIRECTORY_URL = 'https://admin.googleapis.com';
/** Asked for besides `openid`, which is always asked for (Dex's default). */
export const DEFAULT_GOOGLE_SCOPES: readonly string[] = ['profile', 'email'];
/** Sent with access_type=offline only when the client asked for offline_access, as Dex does; '' sends none. */
export const DEFAULT_GOOGLE_PROMPT = 'consent';
/** The key of domainToAdminEmail that stands for every domain without an entry of its own (Dex's). */
export const ANY_DOMAIN = '*';

const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

const domain = text.refine((v) => DOMAIN.test(v), 'is not a domain name (such as example.com)').transform((v) => v.toLowerCase());
const email = text.refine((v) => EMAIL.test(v), 'is not an email address');

const serviceAccountKey = z.string({ error: 'must be a string' }).transform((value, ctx) => {
  const reading = readServiceAccountKey(value);
  if (reading.ok) return reading.key;
  ctx.addIssue({ code: 'custom', message: reading.problem });
  return z.NEVER;
});

const domainToAdminEmail = z
  .record(z.string(), email, { error: 'must be a map of domain to the email address of an administrator' })
  .superRefine((map, ctx) => {
    const keys = Object.keys(map);
    if (keys.length === 0) ctx.addIssue({ code: 'custom', message: 'must name at least one domain (or * for every domain)' });
    for (const key of keys) {
      if (key !== ANY_DOMAIN && !DOMAIN.test(key)) ctx.addIssue({ code: 'custom', path: [key], message: `'${key.slice(0, 60)}' is not a domain name or *` });
    }
  })
  .transform((map) => new Map(Object.entries(map).map(([key, admin]) => [key.toLowerCase(), admin] as const)));

export const googleConfigSchema = z.strictObject({
  clientID: text,
  clientSecret: text,
  scopes: textList.default([...DEFAULT_GOOGLE_SCOPES]),
  /** The ID token's `hd` must be one of these; a token without `hd` (a consumer account) is refused. */
  hostedDomains: z.array(domain, { error: 'must be a list of domain names' }).min(1, 'must not be empty: leave it out to let any Google account in').optional(),
  /** Only these groups (their email addresses) count, and the user must be in one of them. */
  groups: textList.min(1, 'must not be empty: leave it out to keep every group').optional(),
  /** The service account's JSON key file, as a secret reference: it reads groups from the Directory API. */
  serviceAccountKey: serviceAccountKey.optional(),
  serviceAccountFilePath: refused('is not taken: svc reads no files; put the key file\'s content in a Secret and name it in serviceAccountKey'),
  adminEmail: refused('is Dex\'s older key: use domainToAdminEmail (with * for every domain)'),
  /** Domain of the user's email -> the administrator the service account acts as; `*` for any other domain. */
  domainToAdminEmail: domainToAdminEmail.optional(),
  /** Also the groups the user's groups are members of, and so on up. */
  fetchTransitiveGroupMembership: flag.default(false),
  promptType: z.string({ error: 'must be a string' }).default(DEFAULT_GOOGLE_PROMPT),
  issuer: httpUrl.default(GOOGLE_ISSUER),
  /** Where the Admin SDK Directory API is served. */
  directoryURL: httpUrl.default(GOOGLE_DIRECTORY_URL),
  /** Added to the system roots for every request of the connector. */
  rootCA: pemCertificates.optional(),
});

export type GoogleConfig = Readonly<z.output<typeof googleConfigSchema>>;

const NEEDS_DIRECTORY = 'needs serviceAccountKey and domainToAdminEmail: groups come from the Directory API';

const checkGoogleConfig: CrossCheck = (raw, at) => {
  const hasKey = isSet(raw, 'serviceAccountKey');
  const hasAdmins = isSet(raw, 'domainToAdminEmail');
  // A private key written into the ConfigMap is readable by everyone who may read svc's settings.
  if (hasKey && !isFromSecret(raw, 'serviceAccountKey')) at.add(['serviceAccountKey'], 'must be a secret reference ($<key> or $<secret>:<key>): a private key does not belong in a ConfigMap');
  if (hasKey && !hasAdmins) at.add(['domainToAdminEmail'], 'required with serviceAccountKey: the administrator the service account acts as, per domain (or * for every domain)');
  if (hasAdmins && !hasKey) at.add(['serviceAccountKey'], 'required with domainToAdminEmail: the service account that acts as those administrators');
  // Without the Directory API nobody has a group, so nobody could log in.
  if (isSet(raw, 'groups') && !(hasKey && hasAdmins)) at.add(['groups'], `${NEEDS_DIRECTORY}, so without them nobody could log in`);
  if (raw['fetchTransitiveGroupMembership'] === true && !(hasKey && hasAdmins)) at.add(['fetchTransitiveGroupMembership'], NEEDS_DIRECTORY);
  checkAdminsCoverDomains(raw, at);
};

/** Every hosted domain has an administrator (or `*` stands for it): else its users' groups cannot be read. */
const checkAdminsCoverDomains: CrossCheck = (raw, at) => {
  const admins = raw['domainToAdminEmail'];
  const hosted = raw['hostedDomains'];
  if (typeof admins !== 'object' || admins === null || Array.isArray(admins) || !Array.isArray(hosted)) return;
  const named = new Set(Object.keys(admins).map((k) => k.toLowerCase()));
  if (named.has(ANY_DOMAIN)) return;
  const missing = hosted.filter((d): d is string => typeof d === 'string' && DOMAIN.test(d) && !named.has(d.toLowerCase()));
  if (missing.length > 0) at.add(['domainToAdminEmail'], `names no administrator for the hosted domain(s) ${missing.join(', ')}: add them, or *`);
};

/** The checked config, or undefined after reporting every problem to `input.at`. */
export function parseGoogleConfig(input: ParseInput): GoogleConfig | undefined {
  return parseTypeConfig(googleConfigSchema, input, checkGoogleConfig);
}
