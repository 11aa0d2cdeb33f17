/**
 * `svc login <server> --sso`: asks the server which identity provider it uses, logs in there
 * (browser + loopback listener, or the device flow with --no-browser) and stores the ID token,
 * which the CLI sends as its bearer token, with the refresh token that renews it.
 */
import * as oidc from 'openid-client';
import { updateConfig, withLogin } from '../config-file.js';
import type { CliContext } from '../context.js';
import { CliError } from '../errors.js';
import { browserOpener } from '../sso/browser-open.js';
import { codeFlowLogin } from '../sso/code-flow.js';
import { deviceFlowLogin } from '../sso/device-flow.js';
import { discoverProvider, ssoProvider } from '../sso/discovery.js';

export interface SsoLoginOptions {
  readonly server: string;
  readonly insecure: boolean;
  readonly port: string;
  /** false with --no-browser: the device flow. */
  readonly browser: boolean;
}

export async function runSsoLogin(ctx: CliContext, options: SsoLoginOptions): Promise<void> {
  const port = parsePort(options.port);
  const { server, insecure } = options;
  const fetchOption = ctx.io.fetch !== undefined ? { fetch: ctx.io.fetch } : {};
  const provider = await ssoProvider(ctx.clientFor({ server, insecure }));
  const config = await discoverProvider(provider, { insecure, ...fetchOption });
  const say = (line: string): void => void ctx.io.stderr.write(`${line}\n`);
  const tokens = options.browser
    ? await codeFlowLogin(config, provider, { port, open: browserOpener(ctx.io.env), say })
    : await deviceFlowLogin(config, provider, say);
  if (tokens.id_token === undefined) throw new CliError('the identity provider answered without an ID token');
  const refresh = tokens.refresh_token !== undefined ? { refreshToken: tokens.refresh_token } : {};
  await updateConfig(ctx.configFile(), (c) => withLogin(c, { server, insecure, token: tokens.id_token as string, ...refresh }));
  ctx.print(`'${displayName(tokens.claims())}' logged in successfully`);
  ctx.print(`Context '${server}' updated`);
}

function displayName(claims: oidc.IDToken | undefined): string {
  const pick = (key: string): string | undefined => (typeof claims?.[key] === 'string' && claims[key] !== '' ? claims[key] : undefined);
  return pick('preferred_username') ?? pick('email') ?? pick('name') ?? claims?.sub ?? 'unknown user';
}

function parsePort(text: string): number {
  const port = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new CliError(`--sso-port must be a port number (0-65535), not '${text}'`);
  return port;
}
