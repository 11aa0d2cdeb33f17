/**
 * Which Entra tenant a login comes from, and whether svc accepts it. The v2.0 discovery document
 * of `<authority>/<tenant>` names the endpoints and the issuer: for a tenant id or domain the
 * issuer carries the tenant's id (`https://login.microsoftonline.com/<tid>/v2.0`); for
 * `organizations` and `common` it is a template (`.../{tenantid}/v2.0`) that each ID token's
 * `tid` fills in. So an ID token is accepted only when its `tid` is a tenant id, the configured
 * tenant's when one is configured (never the personal accounts' tenant under `organizations`),
 * and its `iss` is exactly the issuer for that `tid`: an `iss` alone, or a `tid` alone, decides
 * nothing.
 */
import { isGuid, type MicrosoftConfig } from './config.js';

/** The tenant of personal Microsoft accounts (Microsoft's documented constant). */
export const CONSUMERS_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';
const TEMPLATE = '{tenantid}';

export interface Discovered {
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  readonly jwksUri: string;
  /** The issuer, with `{tenantid}` for organizations and common. */
  readonly issuer: string;
  /** The configured tenant's id (from the issuer); undefined for organizations and common. */
  readonly tenantId: string | undefined;
}

/** Why discovery's document cannot be used (for the log). */
export class DiscoveryFailed extends Error {
  override readonly name = 'DiscoveryFailed';
}

/** Why an ID token is not accepted (for the log; the person sees one refusal). */
export class TenantRefused extends Error {
  override readonly name = 'TenantRefused';
}

export function discoveryUrl(config: MicrosoftConfig): string {
  return `${config.authority}/${encodeURIComponent(config.tenant)}/v2.0/.well-known/openid-configuration`;
}

function isMulti(config: MicrosoftConfig): boolean {
  return config.tenant === 'common' || config.tenant === 'organizations';
}

/** The endpoints and issuer of a discovery document; each endpoint must be on the authority's origin (the client secret goes there). */
export function readDiscovery(doc: unknown, config: MicrosoftConfig): Discovered {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new DiscoveryFailed('the discovery document is not a JSON object');
  const field = (key: string): string => {
    const value = (doc as Record<string, unknown>)[key];
    if (typeof value !== 'string') throw new DiscoveryFailed(`the discovery document has no ${key}`);
    return value;
  };
  const endpoint = (key: string): string => {
    const value = field(key);
    if (!URL.canParse(value) || new URL(value).origin !== config.authority) throw new DiscoveryFailed(`the discovery document's ${key} is not on ${config.authority}`);
    return value;
  };
  const issuer = field('issuer');
  const match = /^(https?:\/\/[^/]+)\/([^/]+)\/v2\.0$/.exec(issuer);
  const segment = match?.[2];
  if (segment === undefined || !URL.canParse(issuer)) throw new DiscoveryFailed(`the discovery document names the issuer ${JSON.stringify(issuer)}, not <host>/<tenant>/v2.0`);
  let tenantId: string | undefined;
  if (isMulti(config)) {
    if (segment !== TEMPLATE) throw new DiscoveryFailed(`tenant ${config.tenant}: the issuer ${JSON.stringify(issuer)} is not the ${TEMPLATE} template`);
  } else {
    if (!isGuid(segment)) throw new DiscoveryFailed(`tenant ${config.tenant}: the issuer ${JSON.stringify(issuer)} names no tenant id`);
    if (isGuid(config.tenant) && segment.toLowerCase() !== config.tenant.toLowerCase()) throw new DiscoveryFailed(`the issuer ${JSON.stringify(issuer)} names another tenant than ${config.tenant}`);
    tenantId = segment.toLowerCase();
  }
  return {
    authorizationEndpoint: endpoint('authorization_endpoint'),
    tokenEndpoint: endpoint('token_endpoint'),
    jwksUri: endpoint('jwks_uri'),
    issuer,
    tenantId,
  };
}

/** The ID token's tenant id, when its `tid` and `iss` are acceptable for the configured tenant; TenantRefused otherwise. */
export function acceptedTenant(claims: Readonly<Record<string, unknown>>, discovered: Discovered, config: MicrosoftConfig): string {
  const { tid, iss } = claims;
  if (typeof tid !== 'string' || !isGuid(tid)) throw new TenantRefused('the ID token has no tenant id (tid)');
  const tenantId = tid.toLowerCase();
  if (discovered.tenantId !== undefined && tenantId !== discovered.tenantId) throw new TenantRefused(`the ID token comes from tenant ${tenantId}, not ${config.tenant} (${discovered.tenantId})`);
  if (config.tenant === 'organizations' && tenantId === CONSUMERS_TENANT) throw new TenantRefused('a personal Microsoft account, under tenant organizations');
  const expected = discovered.tenantId === undefined ? discovered.issuer.replace(TEMPLATE, tid) : discovered.issuer;
  if (iss !== expected) throw new TenantRefused(`the ID token's issuer is ${JSON.stringify(iss)}, not ${JSON.stringify(expected)}`);
  return tenantId;
}
