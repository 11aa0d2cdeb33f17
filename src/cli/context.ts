/**
 * What every command needs: the process's streams and environment (injected, so tests run the
 * program in-process), the global flags, and from them the server, token and API client.
 *
 * Precedence, as kubectl and argocd: a flag beats the environment (`SVC_SERVER`,
 * `SVC_AUTH_TOKEN`), which beats the config file's current context.
 */
import { ApiClient, type FetchLike } from './api-client.js';
import { configPath, currentLogin, loginFor, readConfig } from './config-file.js';
import { CliError } from './errors.js';
import { createPrompter, type PromptInput, type Prompter } from './prompt.js';
import { freshToken } from './sso/refresh.js';

export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: PromptInput;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly fetch?: FetchLike;
  /** Milliseconds since the epoch; injected in tests to make a stored ID token look expired. */
  readonly now?: () => number;
}

export interface GlobalOptions {
  readonly server?: string;
  readonly authToken?: string;
  readonly config?: string;
  readonly insecure?: boolean;
  readonly plaintext?: boolean;
}

/** Where a token came from: only a config-file token is the CLI's to replace or forget. */
export type TokenSource = 'flag' | 'env' | 'config';

export interface Target {
  readonly server: string;
  readonly insecure: boolean;
  readonly token?: string;
  readonly tokenSource?: TokenSource;
  /** Only for a config-file token from an SSO login. */
  readonly refreshToken?: string;
}

export class CliContext {
  readonly prompt: Prompter;

  constructor(
    readonly io: CliIo,
    private readonly globals: () => GlobalOptions,
  ) {
    this.prompt = createPrompter(io);
  }

  get options(): GlobalOptions {
    return this.globals();
  }

  configFile(): string {
    return configPath(this.io.env, this.options.config);
  }

  print(text: string): void {
    this.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Server, token and TLS switch from flags, environment and config file. */
  async target(): Promise<Target> {
    const options = this.options;
    const config = await readConfig(this.configFile());
    const explicit = nonEmpty(options.server) ?? nonEmpty(this.io.env['SVC_SERVER']);
    const server = explicit !== undefined ? normalizeServer(explicit, options.plaintext === true) : currentLogin(config)?.server;
    if (server === undefined) {
      throw new CliError("no server: run 'svc login <server>', pass --server or set SVC_SERVER");
    }
    const saved = loginFor(config, server);
    const insecure = options.insecure === true || saved.insecure;
    const flagToken = nonEmpty(options.authToken);
    if (flagToken !== undefined) return { server, insecure, token: flagToken, tokenSource: 'flag' };
    const envToken = nonEmpty(this.io.env['SVC_AUTH_TOKEN']);
    if (envToken !== undefined) return { server, insecure, token: envToken, tokenSource: 'env' };
    if (saved.token !== undefined) {
      const refresh = saved.refreshToken !== undefined ? { refreshToken: saved.refreshToken } : {};
      return { server, insecure, token: saved.token, tokenSource: 'config', ...refresh };
    }
    return { server, insecure };
  }

  /**
   * A client for the target; throws "not logged in" when there is no token. An SSO login's ID
   * token is renewed first when it has expired or is about to, unless `renew` is false (logout
   * must work with a login the provider no longer renews).
   */
  async client(renew = true): Promise<{ client: ApiClient; target: Target }> {
    const stored = await this.target();
    if (stored.token === undefined) {
      throw new CliError(`not logged in to ${stored.server}: run 'svc login ${stored.server}' or set SVC_AUTH_TOKEN`);
    }
    if (!renew) return { client: this.clientFor(stored), target: stored };
    const token = await freshToken({ ...stored, token: stored.token }, {
      configFile: this.configFile(),
      now: this.now,
      ...(this.io.fetch !== undefined ? { fetch: this.io.fetch } : {}),
    });
    const target = { ...stored, token };
    return { client: this.clientFor(target), target };
  }

  get now(): () => number {
    return this.io.now ?? Date.now;
  }

  clientFor(target: Target): ApiClient {
    return new ApiClient({
      server: target.server,
      insecure: target.insecure,
      ...(target.token !== undefined ? { token: target.token } : {}),
      ...(this.io.fetch !== undefined ? { fetch: this.io.fetch } : {}),
    });
  }
}

/**
 * `https://host:port` from what the user typed. Without a scheme https is assumed (as argocd
 * does) unless --plaintext; a path or trailing slash is kept out of the key.
 */
export function normalizeServer(text: string, plaintext: boolean): string {
  const trimmed = text.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `${plaintext ? 'http' : 'https'}://${trimmed}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new CliError(`'${text}' is not a server address (want host:port or http(s)://host:port)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError(`'${text}' is not a server address (the scheme must be http or https)`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new CliError('the server address must not contain a user name or password');
  }
  const base = `${url.protocol}//${url.host}${url.pathname}`;
  return base.replace(/\/+$/, '');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
