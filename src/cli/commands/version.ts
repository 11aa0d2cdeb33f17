/**
 * `svc version`: the client's version, then the server's (`GET /api/version`) when a server is
 * known from the flags, the environment or the config file, as `argocd version` does. A server
 * that cannot be asked fails the command after the client's line; `--client` asks none.
 */
import type { Command } from 'commander';
import { svcVersion } from '../../lib/version.js';
import type { CliContext } from '../context.js';
import { CliError } from '../errors.js';

export function registerVersion(program: Command, ctx: CliContext): void {
  program
    .command('version')
    .description("print the client's version, and the server's when a server is known")
    .option('--client', "print only the client's version")
    .action(async function version(opts: { client?: boolean }) {
      ctx.print(`svc: ${svcVersion()}`);
      if (opts.client === true) return;
      const target = await ctx.target().catch((err: unknown) => (err instanceof CliError && err.message.startsWith('no server') ? undefined : Promise.reject(err)));
      if (target === undefined) return;
      const body = await ctx.clientFor(target).request<{ version?: unknown }>('GET', '/api/version');
      if (typeof body.version !== 'string') throw new CliError(`${target.server} answered /api/version without a version`);
      ctx.print(`svc-server: ${body.version} (${target.server})`);
    });
}
