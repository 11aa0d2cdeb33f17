/**
 * `svc session list` and `svc session delete ID | --all-others`: the caller's sessions (or, with
 * `--account`, another account's, for an admin), over GET /api/v1/session/list and
 * DELETE /api/v1/session/{id}. `--all-others` ends every session but the one this CLI uses.
 */
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { CliError } from '../errors.js';
import { parseOutputFormat, renderSessionList } from '../output.js';

interface ListOptions {
  readonly account?: string;
  readonly output?: string;
}
interface DeleteOptions {
  readonly account?: string;
  readonly allOthers?: boolean;
}

export function registerSession(program: Command, ctx: CliContext): void {
  const session = program.command('session').description('list and end the sessions of your account (every login is one)');
  session
    .command('list')
    .description('list the sessions, newest first; * marks the one this CLI uses')
    .option('--account <name>', "another person's sessions: a local account's name, or an SSO user's key sso:<issuer>:<sub> (needs accounts, update, <name>)")
    .option('-o, --output <format>', 'json, yaml or wide')
    .action(async function listSessions(options: ListOptions) {
      const format = parseOutputFormat(options.output);
      const { client } = await ctx.client();
      ctx.io.stdout.write(renderSessionList(format, await client.listSessions(options.account)));
    });
  session
    .command('delete')
    .description('end a session by its id (its token stops working at once), or every other one with --all-others')
    .argument('[id]', 'the session id, as `svc session list` shows it')
    .option('--all-others', 'end every session but the one this CLI uses')
    .option('--account <name>', "another person's session: a local account's name, or an SSO user's key sso:<issuer>:<sub> (needs accounts, update, <name>)")
    .action(async function deleteSession(id: string | undefined, options: DeleteOptions) {
      if ((id === undefined) === (options.allOthers !== true)) throw new CliError('give a session id or --all-others (not both)');
      const { client } = await ctx.client();
      if (id !== undefined) {
        await client.endSession(id, options.account);
        ctx.print(`session '${id}' ended`);
        return;
      }
      const others = (await client.listSessions(options.account)).filter((s) => !s.current);
      for (const other of others) await client.endSession(other.id, options.account);
      ctx.print(`${others.length} other session${others.length === 1 ? '' : 's'} ended`);
    });
}
