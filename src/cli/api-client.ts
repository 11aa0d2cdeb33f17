/**
 * A small fetch-based client of the JSON API (DESIGN.md §4). Every non-2xx answer becomes an
 * ApiError carrying the server's `{error, message}`; a network failure becomes a CliError that
 * names the server and the cause, with a hint to pass --insecure when the certificate is
 * self-signed. The token goes only into the Authorization header, never into a message.
 *
 * Why undici's own fetch for --insecure: Node's global fetch is a bundled undici whose version
 * differs from the installed one, and handing it a foreign Agent as `dispatcher` is not
 * supported; undici's fetch with its own Agent is.
 */
import { STATUS_CODES } from 'node:http';
import { Agent, fetch as undiciFetch } from 'undici';
import { svcVersion } from '../lib/version.js';
import { ApiError, CliError } from './errors.js';

/** Every request says it is the CLI: the server lists its sessions as `cli` (docs/accounts.md "Sessions"). */
export function userAgent(): string {
  return `svc/${svcVersion()}`;
}

/** Asked for a second-factor code, given the factors the server offers (totp, webauthn, recovery). */
export type SecondFactorPrompt = (factors: readonly string[]) => Promise<string>;

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface ApiClientOptions {
  /** Base URL, `https://host:port`, without a trailing slash. */
  readonly server: string;
  readonly token?: string;
  /** Skip TLS certificate verification (self-signed servers). */
  readonly insecure?: boolean;
  /** Injected in tests; defaults to the global fetch (or undici's when insecure). */
  readonly fetch?: FetchLike;
}

export interface UserInfo {
  readonly loggedIn: boolean;
  readonly username?: string;
  readonly displayName?: string;
  readonly iss?: string;
  readonly groups?: readonly string[];
}

export interface TokenInfo {
  readonly id: string;
  readonly issuedAt?: number | string;
  readonly expiresAt?: number | string | null;
}

export interface Account {
  readonly name: string;
  readonly enabled: boolean;
  readonly capabilities: readonly string[];
  readonly tokens: readonly TokenInfo[];
}

export interface GenerateTokenRequest {
  readonly id?: string;
  /** Seconds; 0 means the token never expires. */
  readonly expiresIn?: number;
}

/** One session as GET /api/v1/session/list gives it. */
/** GET /api/v1/account/second-factor: what is on, never a secret. */
export interface SecondFactorStatus {
  readonly totp: boolean;
  readonly passkeys: readonly { readonly id: string; readonly name: string; readonly createdAt: number }[];
  readonly recoveryCodesLeft: number;
  /** users.mfa.required in force. */
  readonly required: boolean;
}

export interface SessionInfo {
  readonly id: string;
  readonly kind: string;
  readonly client: string;
  readonly address: string;
  readonly createdAt: string;
  readonly lastUsedAt: string;
  readonly expiresAt: string;
  readonly current: boolean;
}

export interface UpdatePasswordRequest {
  readonly name: string;
  readonly currentPassword: string;
  readonly newPassword: string;
}

const CERT_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export class ApiClient {
  private readonly fetch: FetchLike;

  constructor(private readonly options: ApiClientOptions) {
    this.fetch = options.fetch ?? (options.insecure === true ? insecureFetch() : globalThis.fetch);
  }

  get server(): string {
    return this.options.server;
  }

  get hasToken(): boolean {
    return this.options.token !== undefined;
  }

  /**
   * A session for a password; for an account with a second factor, `secondFactor` is asked for
   * a code (given the factors the server offers) and the login's second step is sent with it.
   */
  async createSession(username: string, password: string, secondFactor?: SecondFactorPrompt): Promise<string> {
    try {
      return requireToken(await this.request<{ token?: unknown }>('POST', '/api/v1/session', { username, password }));
    } catch (err: unknown) {
      if (!(err instanceof ApiError) || err.code !== 'second_factor_required' || secondFactor === undefined) throw err;
      const challenge = err.details?.['challenge'];
      const factors = err.details?.['factors'];
      if (typeof challenge !== 'string' || !Array.isArray(factors)) throw new CliError('the server asked for a second factor without a challenge');
      const code = await secondFactor(factors.filter((f): f is string => typeof f === 'string'));
      return requireToken(await this.request<{ token?: unknown }>('POST', '/api/v1/session', { challenge, code }));
    }
  }

  /** The logged-in account's second factor: what is on, never a secret. */
  secondFactorStatus(): Promise<SecondFactorStatus> {
    return this.request('GET', '/api/v1/account/second-factor');
  }

  /**
   * Turns TOTP off for the logged-in account, with the recent proof the API takes (the password
   * and a code: the app's or a recovery code). Ends every session of the account, this one too.
   */
  async removeTotp(proof: { readonly password: string; readonly code: string }): Promise<void> {
    await this.request('DELETE', '/api/v1/account/second-factor/totp', proof);
  }

  /**
   * Starts a TOTP enrolment of the logged-in account: the secret and its otpauth:// URI. Takes
   * the account's password, and a code when a factor is already on (a session alone never
   * changes a factor).
   */
  startTotp(proof: { readonly password: string; readonly code?: string }): Promise<{ readonly secret: string; readonly uri: string }> {
    return this.request('POST', '/api/v1/account/second-factor/totp', proof);
  }

  /** Confirms it with a code from the app: the ten recovery codes, shown this once. */
  async confirmTotp(code: string): Promise<readonly string[]> {
    const body = await this.request<{ recoveryCodes?: unknown }>('POST', '/api/v1/account/second-factor/totp/confirm', { code });
    if (!Array.isArray(body.recoveryCodes)) throw new CliError('the server confirmed TOTP without recovery codes');
    return body.recoveryCodes.map(String);
  }

  /**
   * RFC 8693 token exchange of a workload's platform token for a svc token. Errors are RFC 6749
   * bodies (`error`, `error_description`), which become an ApiError like any other.
   */
  async exchangeToken(subjectToken: string): Promise<{ readonly token: string; readonly expiresIn: number }> {
    const body = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: subjectToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    }).toString();
    const init: RequestInit = { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': userAgent() }, body };
    let response: Response;
    try {
      response = await this.fetch(`${this.options.server}/api/v1/session/exchange`, init);
    } catch (err: unknown) {
      throw networkError(this.options.server, err);
    }
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'object' && value !== null) parsed = value as Record<string, unknown>;
    } catch {
      // not JSON: said below
    }
    if (!response.ok) {
      const { error, error_description: description } = parsed;
      if (typeof error === 'string') throw new ApiError(response.status, error, typeof description === 'string' && description !== '' ? description : error, this.options.server);
      throw apiError(response, text, this.options.server);
    }
    const { access_token: token, expires_in: expiresIn } = parsed;
    if (typeof token !== 'string' || token === '') throw new CliError('the server answered the token exchange without an access_token');
    return { token, expiresIn: typeof expiresIn === 'number' ? expiresIn : 0 };
  }

  async deleteSession(): Promise<void> {
    await this.request('DELETE', '/api/v1/session');
  }

  /** The sessions of `account` (default: the caller's), newest first. */
  async listSessions(account?: string): Promise<readonly SessionInfo[]> {
    const query = account === undefined ? '' : `?account=${segment(account)}`;
    const body = await this.request<{ items?: readonly SessionInfo[] }>('GET', `/api/v1/session/list${query}`);
    return body.items ?? [];
  }

  /** Ends one session by its id (not the caller's logout: deleteSession). */
  async endSession(id: string, account?: string): Promise<void> {
    const query = account === undefined ? '' : `?account=${segment(account)}`;
    await this.request('DELETE', `/api/v1/session/${segment(id)}${query}`);
  }

  userInfo(): Promise<UserInfo> {
    return this.request<UserInfo>('GET', '/api/v1/session/userinfo');
  }

  async listAccounts(): Promise<readonly Account[]> {
    const body = await this.request<{ items?: readonly Account[] }>('GET', '/api/v1/account');
    return body.items ?? [];
  }

  getAccount(name: string): Promise<Account> {
    return this.request<Account>('GET', `/api/v1/account/${segment(name)}`);
  }

  /** A fresh session token when the caller changed its own password with a session token. */
  async updatePassword(request: UpdatePasswordRequest): Promise<string | undefined> {
    const body = await this.request<{ token?: unknown }>('PUT', '/api/v1/account/password', request);
    return typeof body.token === 'string' && body.token !== '' ? body.token : undefined;
  }

  async generateToken(name: string, request: GenerateTokenRequest): Promise<string> {
    const body = await this.request<{ token?: unknown }>('POST', `/api/v1/account/${segment(name)}/token`, request);
    return requireToken(body);
  }

  /** An SSO user's personal API token (POST /api/v1/session/tokens): the token text. */
  async createSsoToken(name: string, expiresIn: number): Promise<string> {
    const body = await this.request<{ token?: unknown }>('POST', '/api/v1/session/tokens', { name, expiresIn });
    return requireToken(body);
  }

  async deleteSsoToken(id: string): Promise<void> {
    await this.request('DELETE', `/api/v1/session/tokens/${segment(id)}`);
  }

  async deleteToken(name: string, id: string): Promise<void> {
    await this.request('DELETE', `/api/v1/account/${segment(name)}/token/${segment(id)}`);
  }

  async canI(action: string, resource: string, object: string): Promise<boolean> {
    const path = `/api/v1/account/can-i/${segment(resource)}/${segment(action)}/${segment(object)}`;
    const body = await this.request<{ value?: unknown }>('GET', path);
    if (body.value !== 'yes' && body.value !== 'no') throw new CliError('the server answered can-i without a yes or no');
    return body.value === 'yes';
  }

  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': userAgent() };
    if (this.options.token !== undefined) headers['authorization'] = `Bearer ${this.options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const init: RequestInit = { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) };
    let response: Response;
    try {
      response = await this.fetch(`${this.options.server}${path}`, init);
    } catch (err: unknown) {
      throw networkError(this.options.server, err);
    }
    const text = await response.text();
    if (!response.ok) throw apiError(response, text, this.options.server);
    if (text.trim() === '') return {} as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`${this.options.server} answered ${method} ${path} with something that is not JSON`);
    }
  }
}

/** `{error, message}` when the server sent it; otherwise the status line. */
export function apiError(response: Pick<Response, 'status' | 'statusText'>, text: string, server?: string): ApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const { error, message } = parsed as { error?: unknown; message?: unknown };
    if (typeof error === 'string') {
      return new ApiError(response.status, error, typeof message === 'string' && message !== '' ? message : error, server, parsed as Record<string, unknown>);
    }
  }
  // HTTP/2 and some proxies send no reason phrase; the standard one reads better than none.
  const phrase = response.statusText !== '' ? response.statusText : STATUS_CODES[response.status];
  const reason = phrase !== undefined ? ` ${phrase}` : '';
  return new ApiError(response.status, `http_${response.status}`, `the server answered ${response.status}${reason}`, server);
}

/** "cannot reach https://x: connect ECONNREFUSED …", plus a hint for certificate trouble. */
export function networkError(server: string, err: unknown): CliError {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  const detail = cause instanceof Error ? cause.message : String(cause);
  // TLS spoken to a plain http server: OpenSSL's "wrong version number" says nothing useful.
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || (code === 'EPROTO' && /wrong version number/.test(detail))) {
    return new CliError(`cannot reach ${server}: the server speaks plain http, not TLS (log in with HOST:PORT --plaintext, or an http:// URL)`, { cause: err });
  }
  const hint = typeof code === 'string' && CERT_ERRORS.has(code) ? ' (pass --insecure to skip certificate verification)' : '';
  return new CliError(`cannot reach ${server}: ${detail}${hint}`, { cause: err });
}

function requireToken(body: { token?: unknown }): string {
  if (typeof body.token !== 'string' || body.token === '') throw new CliError('the server answered without a token');
  return body.token;
}

function segment(value: string): string {
  return encodeURIComponent(value);
}

type UndiciInit = NonNullable<Parameters<typeof undiciFetch>[1]>;

export function insecureFetch(): FetchLike {
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  return (url, init) => undiciFetch(url, { ...(init as unknown as UndiciInit), dispatcher }) as unknown as Promise<Response>;
}
