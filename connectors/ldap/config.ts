/**
 * The LDAP connector's configuration: Dex's keys (connector/ldap/ldap.go), checked strictly and
 * turned into one readonly `LdapConfig` with every default applied. Parsing opens nothing and
 * loads no LDAP library (ldapts is imported by ./ldap.ts on first use only), so
 * `svc-server validate` stays light.
 *
 * Where svc differs from Dex, on purpose:
 * - `rootCA`, `clientCert` and `clientKey` are PEM text (or a secret reference to it), never a
 *   file path: the configuration lives in manifests, not on the server's disk.
 * - `rootCA`/`rootCAData` are added to the system roots (DESIGN.md §7) rather than replacing them.
 * - `startTLS` without a port means 389; Dex gives 636 there, where no server speaks StartTLS.
 * - Combinations Dex silently resolves (insecureNoSSL with startTLS, rootCA with rootCAData, a
 *   bindDN without bindPW, `ldap://` in host) are errors naming the keys.
 * - `idAttr` is required: Dex documents a default of `uid` but never applies it, and then fails
 *   every login with "missing attribute".
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import type { ScopedSink } from '../../src/config/problems.js';
import { withoutKey } from '../../src/config/secret-ref.js';
import { parseWith } from '../../src/config/zod-problems.js';
import { text } from '../config-schema.js';

/** ldaps:// (and ldap:// with StartTLS, Dex's 636 aside). */
export const DEFAULT_TLS_PORT = 636;
/** ldap:// with `insecureNoSSL` or `startTLS`. */
export const DEFAULT_PLAIN_PORT = 389;
export const DEFAULT_SCOPE = 'sub';
/** The label of the username field when `usernamePrompt` is not set (Dex: "Username"). */
export const DEFAULT_USERNAME_PROMPT = 'Username';

export type Scope = 'sub' | 'one';
export type Transport = 'ldaps' | 'startTLS' | 'plain';

export interface UserMatcher {
  /** An attribute of the user entry; `DN` means the entry's DN. */
  readonly userAttr: string;
  /** The group attribute that holds that value (`member`, `memberUid`). */
  readonly groupAttr: string;
  /** Nested groups: the group attribute holding a member group's DN; parents are followed breadth-first. */
  readonly recursionGroupAttr: string | undefined;
}

export interface UserSearch {
  readonly baseDN: string;
  /** A parenthesised filter ANDed with the username match, or undefined. */
  readonly filter: string | undefined;
  readonly username: string;
  readonly scope: Scope;
  readonly idAttr: string;
  readonly emailAttr: string | undefined;
  readonly nameAttr: string | undefined;
  readonly preferredUsernameAttr: string | undefined;
  readonly emailSuffix: string | undefined;
}

export interface GroupSearch {
  readonly baseDN: string;
  readonly filter: string | undefined;
  readonly scope: Scope;
  readonly userMatchers: readonly UserMatcher[];
  readonly nameAttr: string;
}

export interface LdapConfig {
  /** Host name or IP address, without brackets or port. */
  readonly host: string;
  readonly port: number;
  readonly transport: Transport;
  readonly insecureSkipVerify: boolean;
  /** Extra trusted CAs (PEM), added to the system roots. */
  readonly rootCAs: readonly string[];
  readonly clientCert: string | undefined;
  readonly clientKey: string | undefined;
  /** undefined: anonymous bind. */
  readonly bind: { readonly dn: string; readonly password: string } | undefined;
  readonly usernamePrompt: string;
  readonly userSearch: UserSearch;
  /** undefined: no groups (Dex: an empty groupSearch.baseDN). */
  readonly groupSearch: GroupSearch | undefined;
  /** Read from the legacy groupSearch.userAttr/groupAttr pair: warned about at start. */
  readonly legacyGroupMatcher: boolean;
}

const scope = z.enum(['sub', 'one']);

const userSearchSchema = z.strictObject({
  baseDN: text,
  filter: z.string().optional(),
  username: text,
  scope: scope.optional(),
  idAttr: text,
  emailAttr: z.string().optional(),
  nameAttr: z.string().optional(),
  preferredUsernameAttr: z.string().optional(),
  emailSuffix: z.string().optional(),
});

const userMatcherSchema = z.strictObject({ userAttr: text, groupAttr: text, recursionGroupAttr: z.string().optional() });

const groupSearchSchema = z.strictObject({
  baseDN: z.string().optional(),
  filter: z.string().optional(),
  scope: scope.optional(),
  userMatchers: z.array(userMatcherSchema).optional(),
  userAttr: z.string().optional(),
  groupAttr: z.string().optional(),
  recursionGroupAttr: z.string().optional(),
  nameAttr: z.string().optional(),
});

const schema = z.strictObject({
  host: text,
  insecureNoSSL: z.boolean().optional(),
  startTLS: z.boolean().optional(),
  insecureSkipVerify: z.boolean().optional(),
  rootCA: z.string().optional(),
  rootCAData: z.string().optional(),
  clientCert: z.string().optional(),
  clientKey: z.string().optional(),
  bindDN: z.string().optional(),
  bindPW: z.string().optional(),
  usernamePrompt: z.string().optional(),
  userSearch: userSearchSchema,
  groupSearch: groupSearchSchema.optional(),
});

type Raw = z.infer<typeof schema>;

/**
 * The checked configuration, or undefined after reporting every problem to `at`.
 * `raw` has its secret references resolved already.
 */
export function parseLdapConfig(raw: unknown, at: ScopedSink): LdapConfig | undefined {
  const before = at.count;
  if (typeof raw === 'object' && raw !== null && 'redirectURI' in raw) {
    at.add(['redirectURI'], 'must not be set: LDAP logs in through svc\'s own form, there is no callback');
  }
  const withoutRedirect = omitRedirect(raw);
  const checked = parseWith(schema, withoutRedirect, at);
  if (checked === undefined) {
    // The host's own problem too, in the same run as the schema's (an unknown key must not hide it).
    const host = (withoutRedirect as { host?: unknown } | null)?.host;
    if (typeof host === 'string' && host !== '') parseHost({ host } as Raw, at);
    return undefined;
  }
  const address = parseHost(checked, at);
  const rootCAs = parseRootCAs(checked, at);
  checkCrossFields(checked, at);
  checkClientCert(checked, at);
  checkFilter(checked.userSearch.filter, at.at('userSearch', 'filter'));
  checkFilter(checked.groupSearch?.filter, at.at('groupSearch', 'filter'));
  const groupSearch = parseGroupSearch(checked.groupSearch, at.at('groupSearch'));
  if (at.count !== before || address === undefined || rootCAs === undefined || groupSearch === false) return undefined;
  const u = checked.userSearch;
  return {
    host: address.host,
    port: address.port,
    transport: transportOf(checked),
    insecureSkipVerify: checked.insecureSkipVerify ?? false,
    rootCAs,
    clientCert: nonEmpty(checked.clientCert),
    clientKey: nonEmpty(checked.clientKey),
    bind: nonEmpty(checked.bindDN) === undefined ? undefined : { dn: checked.bindDN ?? '', password: checked.bindPW ?? '' },
    usernamePrompt: nonEmpty(checked.usernamePrompt) ?? DEFAULT_USERNAME_PROMPT,
    userSearch: {
      baseDN: u.baseDN,
      filter: nonEmpty(u.filter),
      username: u.username,
      scope: u.scope ?? DEFAULT_SCOPE,
      idAttr: u.idAttr,
      emailAttr: nonEmpty(u.emailAttr),
      nameAttr: nonEmpty(u.nameAttr),
      preferredUsernameAttr: nonEmpty(u.preferredUsernameAttr),
      emailSuffix: nonEmpty(u.emailSuffix),
    },
    groupSearch: groupSearch?.search,
    legacyGroupMatcher: groupSearch?.legacy ?? false,
  };
}

function omitRedirect(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  return withoutKey(raw as Record<string, unknown>, 'redirectURI');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function transportOf(c: Raw): Transport {
  if (c.insecureNoSSL === true) return 'plain';
  if (c.startTLS === true) return 'startTLS';
  return 'ldaps';
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`; never a URL. */
function parseHost(c: Raw, at: ScopedSink): { host: string; port: number } | undefined {
  const value = c.host;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/([^/]*)/i.exec(value);
  if (scheme !== null) {
    const bare = scheme[2] === '' ? 'ldap.example.org:636' : scheme[2];
    const how = scheme[1]?.toLowerCase() === 'ldaps' ? 'TLS (ldaps) is the default'
      : scheme[1]?.toLowerCase() === 'ldap' ? 'for plain LDAP set insecureNoSSL: true, or startTLS: true to upgrade it' : 'TLS (ldaps) is the default';
    at.add(['host'], `'${value.slice(0, 100)}' has a scheme: write host[:port] ('${bare?.slice(0, 100)}'); ${how}`);
    return undefined;
  }
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]/\s]+))(?::(\d{1,5}))?$/.exec(value);
  const host = match?.[1] ?? match?.[2];
  if (match === null || host === undefined || (match[1] !== undefined && isIP(match[1]) !== 6)) {
    at.add(['host'], `'${value.slice(0, 100)}' must be host[:port] (an IPv6 address in brackets), without a path or spaces`);
    return undefined;
  }
  const defaultPort = c.insecureNoSSL === true || c.startTLS === true ? DEFAULT_PLAIN_PORT : DEFAULT_TLS_PORT;
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (port < 1 || port > 65535) {
    at.add(['host'], 'has a port outside 1-65535');
    return undefined;
  }
  return { host, port };
}

function checkCrossFields(c: Raw, at: ScopedSink): void {
  if (c.insecureNoSSL === true) {
    if (c.startTLS === true) at.add(['startTLS'], 'cannot be used with insecureNoSSL: choose plain LDAP or StartTLS');
    for (const key of ['insecureSkipVerify', 'rootCA', 'rootCAData', 'clientCert', 'clientKey'] as const) {
      if (c[key] !== undefined && c[key] !== false && c[key] !== '') at.add([key], 'has no effect with insecureNoSSL, which uses no TLS');
    }
  }
  const hasDN = nonEmpty(c.bindDN) !== undefined;
  const hasPW = nonEmpty(c.bindPW) !== undefined;
  if (hasDN && !hasPW) at.add(['bindPW'], 'is required with bindDN (leave both out for an anonymous bind)');
  if (hasPW && !hasDN) at.add(['bindDN'], 'is required with bindPW (leave both out for an anonymous bind)');
}

function parseRootCAs(c: Raw, at: ScopedSink): string[] | undefined {
  const before = at.count;
  const pems: string[] = [];
  if (nonEmpty(c.rootCA) !== undefined && nonEmpty(c.rootCAData) !== undefined) {
    at.add(['rootCAData'], 'cannot be used with rootCA: give the CA once');
  }
  if (nonEmpty(c.rootCA) !== undefined) {
    const pem = c.rootCA ?? '';
    if (checkCertificates(pem, at.at('rootCA'), 'rootCA')) pems.push(pem);
  }
  if (nonEmpty(c.rootCAData) !== undefined) {
    const data = (c.rootCAData ?? '').replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data)) at.add(['rootCAData'], 'is not base64 (it holds the PEM text, base64-encoded)');
    else {
      const pem = Buffer.from(data, 'base64').toString('utf8');
      if (checkCertificates(pem, at.at('rootCAData'), 'rootCAData')) pems.push(pem);
    }
  }
  return at.count === before ? pems : undefined;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function checkCertificates(pem: string, at: ScopedSink, key: string): boolean {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    const hint = /^[^\n]*\.(pem|crt|cer)$/i.test(pem.trim()) || pem.trim().startsWith('/') ? ' (svc reads no files: put the certificate itself here, or a secret reference to it)' : '';
    at.add([], `must hold PEM certificates ("-----BEGIN CERTIFICATE-----")${hint}`);
    return false;
  }
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch {
      at.add([], `certificate ${i + 1} of ${key} cannot be read`);
      return false;
    }
  }
  return true;
}

function checkClientCert(c: Raw, at: ScopedSink): void {
  const cert = nonEmpty(c.clientCert);
  const key = nonEmpty(c.clientKey);
  if (cert !== undefined && key === undefined) at.add(['clientKey'], 'is required with clientCert');
  if (key !== undefined && cert === undefined) at.add(['clientCert'], 'is required with clientKey');
  if (cert !== undefined) checkCertificates(cert, at.at('clientCert'), 'clientCert');
  if (key !== undefined) {
    try {
      createPrivateKey(key);
    } catch {
      // Never the value: it is a private key.
      at.add(['clientKey'], 'is not a PEM private key (or is encrypted)');
    }
  }
}

/**
 * A light check so a typo fails validation rather than every login: one parenthesised
 * expression with balanced parentheses (escaped ones, `\28`/`\29`, do not count).
 * ldapts parses it fully at the first login.
 */
function checkFilter(filter: string | undefined, at: ScopedSink): void {
  if (filter === undefined || filter === '') return;
  const trimmed = filter.trim();
  let depth = 0;
  let closedAt = -1;
  for (const [i, ch] of [...trimmed].entries()) {
    if (ch === '(') depth++;
    else if (ch === ')') {
      depth--;
      if (depth < 0) break;
      if (depth === 0 && closedAt < 0) closedAt = i;
    }
  }
  if (!trimmed.startsWith('(') || depth !== 0 || closedAt !== [...trimmed].length - 1) {
    at.add([], 'must be one LDAP filter in parentheses, e.g. (objectClass=person)');
  }
}

/** undefined: no group search; false: a problem was reported. */
function parseGroupSearch(g: Raw['groupSearch'], at: ScopedSink): { search: GroupSearch; legacy: boolean } | undefined | false {
  if (g === undefined) return undefined;
  const before = at.count;
  const matchers: UserMatcher[] = (g.userMatchers ?? []).map((m) => ({ userAttr: m.userAttr, groupAttr: m.groupAttr, recursionGroupAttr: nonEmpty(m.recursionGroupAttr) }));
  const legacyAttr = nonEmpty(g.userAttr);
  const legacyGroup = nonEmpty(g.groupAttr);
  const legacyRecursion = nonEmpty(g.recursionGroupAttr);
  const legacy = legacyAttr !== undefined || legacyGroup !== undefined;
  if (legacyRecursion !== undefined && !legacy) at.add(['recursionGroupAttr'], 'belongs to a matcher: put it in userMatchers');
  if (legacy && matchers.length > 0) at.add(['userMatchers'], 'cannot be used with the older userAttr/groupAttr pair: move that pair into userMatchers');
  else if (legacy && (legacyAttr === undefined || legacyGroup === undefined)) {
    at.add([legacyAttr === undefined ? 'userAttr' : 'groupAttr'], 'is required with its pair (userAttr and groupAttr); better, use userMatchers');
  } else if (legacyAttr !== undefined && legacyGroup !== undefined) matchers.push({ userAttr: legacyAttr, groupAttr: legacyGroup, recursionGroupAttr: legacyRecursion });
  const baseDN = nonEmpty(g.baseDN);
  if (baseDN !== undefined) {
    if (nonEmpty(g.nameAttr) === undefined) at.add(['nameAttr'], 'is required with baseDN: the group attribute that names a group (e.g. cn)');
    if (matchers.length === 0 && !legacy) at.add(['userMatchers'], 'is required with baseDN: how a group names its members (e.g. {userAttr: DN, groupAttr: member})');
  }
  if (at.count !== before) return false;
  // Dex: an empty baseDN means no groups, not an error.
  if (baseDN === undefined) return undefined;
  return {
    search: { baseDN, filter: nonEmpty(g.filter), scope: g.scope ?? DEFAULT_SCOPE, userMatchers: matchers, nameAttr: g.nameAttr ?? '' },
    legacy: legacyAttr !== undefined,
  };
}
