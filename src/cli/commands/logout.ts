/**
 * `svc logout`: revokes the token on the server (DELETE /api/v1/session) and forgets it
 * locally. A token the server no longer accepts is forgotten all the same; when the server
 * cannot be reached the token is still forgotten, but the command fails and says that the
 * token was not revoked, because a copy of it elsewhere would stay valid. After an SSO login
 * the refresh token is also revoked at the identity provider, best effort.
 */
import type { Command } from 'commander';
import { updateConfig, withoutToken } from '../config-file.js';
import type { CliContext } from '../context.js';
import { ApiError, CliError } from '../errors.js';
import { revokeRefreshToken } from '../sso/revoke.js';

export function registerLogout(program: Command, ctx: CliContext): void {
  program
    .command('logout')
    .description('revoke the current token and remove it from the config file')
    .action(async function logout() {
      await runLogout(ctx);
    });
}

async function runLogout(ctx: CliContext): Promise<void> {
  const { client, target } = await ctx.client(false);
  let failure: unknown;
  try {
    await client.deleteSession();
  } catch (err: unknown) {
    if (!(err instanceof ApiError && err.status === 401)) failure = err;
  }
  if (target.refreshToken !== undefined) {
    const fetchOption = ctx.io.fetch !== undefined ? { fetch: ctx.io.fetch } : {};
    await revokeRefreshToken({ server: target.server, insecure: target.insecure, refreshToken: target.refreshToken }, fetchOption);
  }
  if (target.tokenSource === 'config') {
    await updateConfig(ctx.configFile(), (config) => withoutToken(config, target.server));
  }
  if (failure !== undefined) {
    const reason = failure instanceof Error ? failure.message : String(failure);
    throw new CliError(`token removed locally, but the server did not revoke it: ${reason}`, { cause: failure });
  }
  ctx.print(`Logged out from '${target.server}'`);
}
