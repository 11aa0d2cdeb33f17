/**
 * The contract between the bundled identity provider and the sources it signs users in from.
 * A connector turns a login at its upstream into one `Identity`; it never sees sessions, tokens,
 * clients, Koa or the raw HTTP request. Two kinds, as Dex has them:
 *
 * - `password`: svc renders its own form and hands the connector a username and a password (LDAP);
 * - `browser`: the browser leaves for the upstream and comes back to `<url>/api/idp/callback`
 *   (OAuth2/OIDC by redirect, SAML by HTTP-POST). The callback URL is svc's, never configuration.
 *
 * Parsing is apart from opening: `ConnectorType.parse` checks a config and opens nothing, so
 * `svc-server validate` can run it; the factory it returns is called by the registry with the
 * dependencies (fetch with the TLS policy applied, clock, scoped logger).
 */
import type { JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import type { ScopedSink } from '../src/config/problems.js';
import type { SecretLookup } from '../src/config/secret-ref.js';

/** All the identity provider learns about a login. */
export interface Identity {
  /** Stable upstream id: `federated_claims.user_id`, and with the connector id the source of `sub`. */
  readonly userId: string;
  readonly username: string;
  readonly preferredUsername?: string;
  readonly email?: string;
  readonly emailVerified: boolean;
  /** Read at login only (SPEC rule 2). */
  readonly groups: readonly string[];
  /** Opaque state the connector needs to refresh this identity later (an LDAP DN, a refresh token). */
  readonly connectorData?: string;
  /** The upstream's own session of this login, for its back-channel logout; absent when it names none. */
  readonly upstreamSession?: UpstreamSession;
  /**
   * What the source said of the user, as the claim rules read it (`claims`, docs/claims.md): an
   * OIDC source's ID token claims (with userinfo's), an LDAP entry's attributes, a SAML
   * assertion's attributes and `nameID`, a profile's fields; `groups` as the connector found them.
   * Absent: the rules read the identity's own fields. Used at login only, never kept.
   */
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** An OIDC upstream's session: its issuer, the user's `sub` there and its session id `sid` (when it gives one). */
export interface UpstreamSession {
  readonly issuer: string;
  readonly sub: string;
  readonly sid?: string;
}

/**
 * What verifies an upstream's OIDC Back-Channel Logout tokens: its issuer, svc's client id there
 * (the tokens' audience) and its signing keys (fetched under the connector's TLS policy).
 */
export interface LogoutTokenSource {
  readonly issuer: string;
  readonly clientId: string;
  keys(): Promise<JWTVerifyGetKey>;
}

export interface LoginContext {
  /** Always `<url>/api/idp/callback`. */
  readonly callbackUrl: string;
  readonly wantGroups: boolean;
  /** The client asked for `offline_access` (Dex's Scopes.OfflineAccess); absent means no. */
  readonly offlineAccess?: boolean;
  readonly signal: AbortSignal;
  /** Told why a login answered null (unknown user, wrong password), for the log line only: the person sees one message for both. */
  readonly refused?: (reason: string) => void;
  /**
   * A password connector calls this with the entry the name resolved to (an LDAP DN) before it
   * tries the password, so that every spelling of one entry shares one failure budget. False:
   * the entry is locked; answer null without trying the password. Absent: no such budget.
   */
  readonly admitEntry?: (entry: string) => Promise<boolean>;
}

/** The form svc renders; `null` from login means wrong credentials, a throw means trouble upstream. */
export interface PasswordConnector {
  readonly kind: 'password';
  /** The label of the username field ("Username", "Email", as `usernamePrompt` says). */
  readonly prompt: string;
  login(username: string, password: string, ctx: LoginContext): Promise<Identity | null>;
  refresh?(identity: Identity, ctx: LoginContext): Promise<Identity | null>;
  close?(): Promise<void>;
}

export type BrowserStart = { readonly saved?: string } &
  (
    | { readonly via: 'redirect'; readonly url: string }
    | { readonly via: 'post'; readonly action: string; readonly fields: Readonly<Record<string, string>> }
  );

/** OAuth2/OIDC (redirect) and SAML (POST binding): the browser leaves and comes back. */
export interface BrowserConnector {
  readonly kind: 'browser';
  /** `state` goes upstream and comes back; `saved` is kept server-side for complete() (PKCE verifier, request id). */
  begin(state: string, ctx: LoginContext): Promise<BrowserStart>;
  complete(params: URLSearchParams, saved: string | undefined, ctx: LoginContext): Promise<Identity>;
  refresh?(identity: Identity, ctx: LoginContext): Promise<Identity | null>;
  /**
   * The service-provider metadata (XML) an upstream administrator imports, for `callbackUrl`
   * (SAML); served at `<url>/api/idp/saml/<id>/metadata`. Absent for connectors without one.
   */
  metadata?(callbackUrl: string): Promise<string>;
  /** An OIDC upstream's back-channel logout: what verifies its logout tokens. Absent for connectors without one. */
  readonly logoutTokens?: LogoutTokenSource;
  close?(): Promise<void>;
}

export type Connector = PasswordConnector | BrowserConnector;

export interface ConnectorDeps {
  /**
   * fetch to an upstream under the one TLS policy: the system roots plus `rootCAs` (the
   * connector's `rootCA`), or no verification under `oidc.tls.insecure.skip.verify`. Connect and
   * response timeouts are set; a certificate error is logged naming the connector and the host.
   * The connection pools it opens are closed with the connector (call it once, at build).
   */
  upstreamFetch(rootCAs?: readonly string[]): typeof globalThis.fetch;
  readonly now: () => Date;
  /** Already scoped with the connector's type and id. */
  readonly log: Logger;
}

export interface ParseInput {
  /** The connector's `config` map as written, secret references not yet resolved. */
  readonly raw: unknown;
  readonly secrets: SecretLookup;
  /** Scoped at `svc-cm: idp.config: connectors[i].config`. */
  readonly at: ScopedSink;
}

export type ConnectorFactory = (deps: ConnectorDeps) => Connector;

/** Exported by each connectors/<type>/index.ts. */
export interface ConnectorType {
  readonly type: string;
  /** The factory, or undefined after reporting every problem to `at`. Opens nothing. */
  parse(input: ParseInput): ConnectorFactory | undefined;
}
