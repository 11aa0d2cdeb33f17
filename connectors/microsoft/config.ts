/**
 * The `microsoft` connector's config (Microsoft Entra ID, issue 54), checked strictly. The keys
 * are Dex's where Dex has them (`tenant`, `clientID`, `clientSecret`, `groups`,
 * `groupNameFormat`, `onlySecurityGroups`, `graphURL`); `authority` names the login host of a
 * national cloud (Dex's `apiURL`). Differences from Dex, on purpose:
 *
 * - `groupNameFormat` defaults to `id`: a group's object id is unique and immutable, while its
 *   display name is neither (users may be allowed to create Microsoft 365 groups of any name).
 * - `tenant: consumers` is refused: personal accounts have no directory groups.
 * - `groupNameFormat: name` with `tenant: common` or `organizations` is refused: a display name
 *   is chosen by whoever makes the group, in any tenant, so another tenant's admin could make
 *   a group of the name `groups` lists (issue 54, review finding 3). Qualifying names by tenant
 *   was rejected: `groups` would then need `<tid>/<name>`, which is the id format in other words.
 * - `authority` and `graphURL` are origins only (`https://host[:port]`): svc adds the paths.
 */
import { z } from 'zod';
import type { ParseInput } from '../connector.js';
import { flag, isHttpUrl, parseTypeConfig, pemCertificates, text, textList, type CrossCheck } from '../config-schema.js';

export const DEFAULT_AUTHORITY = 'https://login.microsoftonline.com';
export const DEFAULT_GRAPH_URL = 'https://graph.microsoft.com';
export const GROUP_NAME_FORMATS = ['id', 'name'] as const;
export const DEFAULT_GROUP_NAME_FORMAT = 'id';
/** The tenants that are not one directory: any work or school account, or any account at all. */
export const MULTI_TENANTS = ['common', 'organizations'] as const;

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

export function isGuid(value: string): boolean {
  return GUID.test(value);
}

/** `common` or `organizations`: users of any tenant may log in. */
export function isMultiTenant(tenant: unknown): boolean {
  return (MULTI_TENANTS as readonly unknown[]).includes(tenant);
}

const tenant = text.superRefine((value, ctx) => {
  if (value.toLowerCase() === 'consumers') ctx.addIssue({ code: 'custom', message: 'must not be consumers: personal Microsoft accounts have no directory groups' });
  else if (!isMultiTenant(value) && !isGuid(value) && !DOMAIN.test(value)) {
    ctx.addIssue({ code: 'custom', message: 'must be a tenant id (a GUID), a verified domain of the tenant (contoso.onmicrosoft.com), organizations or common' });
  }
});

/** `https://host[:port]` and nothing after it. */
const origin = z.string({ error: (issue) => (issue.input === undefined ? 'required' : 'must be a string') })
  .refine(isHttpUrl, 'not an http(s) URL')
  .refine((value) => !isHttpUrl(value) || new URL(value).origin === value.replace(/\/$/, ''), 'must be an origin only (https://host[:port]), without a path, a query or user info')
  .transform((value) => value.replace(/\/$/, ''));

export const microsoftConfigSchema = z.strictObject({
  /** A tenant id, a domain of the tenant, `organizations` or `common`. */
  tenant,
  clientID: text,
  clientSecret: text,
  /** Only these groups count; a user in none of them is refused. Names or ids, as groupNameFormat says. */
  groups: textList.optional(),
  groupNameFormat: z.enum(GROUP_NAME_FORMATS, { error: 'must be id or name' }).default(DEFAULT_GROUP_NAME_FORMAT),
  /** Only security groups count (Graph's securityEnabled), not Microsoft 365 or distribution groups. */
  onlySecurityGroups: flag.default(false),
  /** The login host: login.microsoftonline.us, login.chinacloudapi.cn for national clouds. */
  authority: origin.default(DEFAULT_AUTHORITY),
  /** Microsoft Graph's host: graph.microsoft.us, microsoftgraph.chinacloudapi.cn for national clouds. */
  graphURL: origin.default(DEFAULT_GRAPH_URL),
  /** Added to the system roots (a TLS-inspecting proxy's CA). */
  rootCA: pemCertificates.optional(),
  apiURL: z.never({ error: 'is not taken: name the login host with authority' }).optional(),
});

export type MicrosoftConfig = Readonly<z.output<typeof microsoftConfigSchema>>;

/** Display names from any tenant would match `groups`: refused, fail closed (see the module header). */
const checkMicrosoftConfig: CrossCheck = (raw, at) => {
  const tenant = raw['tenant'];
  if (raw['groupNameFormat'] === 'name' && isMultiTenant(tenant)) {
    at.add(['groupNameFormat'], `cannot be name with tenant ${String(tenant)}: the admin of any other tenant can make a group of the same display name; use id (the default) and list group object ids in groups, or name one tenant`);
  }
};

/** The checked config, or undefined after reporting every problem to `input.at`. */
export function parseMicrosoftConfig(input: ParseInput): MicrosoftConfig | undefined {
  return parseTypeConfig(microsoftConfigSchema, input, checkMicrosoftConfig);
}
