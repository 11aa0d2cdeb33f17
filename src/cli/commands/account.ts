/**
 * `svc account …`: list, get, update-password, generate-token, delete-token, can-i, over the
 * account API of DESIGN.md §4. `--account` defaults to the logged-in user (from
 * GET /api/v1/session/userinfo), as in argocd.
 */
import type { Command } from 'commander';
import type { ApiClient, UserInfo } from '../api-client.js';
import { updateConfig, withLogin } from '../config-file.js';
import type { CliContext, Target } from '../context.js';
import { ApiError, CliError } from '../errors.js';
import { parseOutputFormat, renderAccount, renderAccountList, renderUserInfo } from '../output.js';

/** The issuer of local accounts' tokens; any other is single sign-on's. */
const LOCAL_ISSUER = 'svc';
import { valueOrPrompt } from '../prompt.js';
import { registerSecondFactor } from './second-factor.js';

interface OutputOption {
  readonly output?: string;
}
interface AccountOption {
  readonly account?: string;
}
interface PasswordOptions extends AccountOption {
  readonly currentPassword?: string;
  readonly newPassword?: string;
}
interface TokenOptions extends AccountOption {
  readonly id?: string;
  readonly expiresIn?: string;
  readonly name?: string;
}

/** The name a single sign-on user's token gets without --name. */
const DEFAULT_SSO_TOKEN_NAME = 'svc cli';

export function registerAccount(program: Command, ctx: CliContext): void {
  const account = program.command('account').description('manage local accounts and their API tokens');
  account
    .command('list')
    .description('list the accounts')
    .option('-o, --output <format>', 'json, yaml or wide')
    .action(async function listAccounts(options: OutputOption) {
      const format = parseOutputFormat(options.output);
      const { client } = await ctx.client();
      ctx.io.stdout.write(renderAccountList(format, await client.listAccounts()));
    });
  account
    .command('get')
    .description('show one account (default: the logged-in user)')
    .option('--account <name>', 'the account')
    .option('-o, --output <format>', 'json, yaml or wide')
    .action(async function getAccount(options: AccountOption & OutputOption) {
      const format = parseOutputFormat(options.output);
      const { client } = await ctx.client();
      const name = options.account ?? (await localUser(client));
      ctx.io.stdout.write(renderAccount(format, await client.getAccount(name)));
    });
  account
    .command('get-user-info')
    .description('show the logged-in user: name, issuer and groups (local accounts and single sign-on)')
    .option('-o, --output <format>', 'json or yaml')
    .action(async function getUserInfo(options: OutputOption) {
      const format = parseOutputFormat(options.output);
      const { client, target } = await ctx.client();
      const info = await client.userInfo();
      ctx.io.stdout.write(renderUserInfo(format, info));
      // Printed as argocd prints it, but a refused token is not success: scripts test the exit code.
      if (!info.loggedIn) throw new CliError(`not logged in: ${target.server} refused the token (expired, revoked or deleted): run 'svc login ${target.server}'`);
    });
  registerPasswordCommand(account, ctx);
  registerTokenCommands(account, ctx);
  registerSecondFactor(account, ctx);
  account
    .command('can-i')
    .description("print 'yes' or 'no': may the current user do ACTION on RESOURCE OBJECT")
    .argument('<action>', 'for example get, update')
    .argument('<resource>', 'for example accounts')
    .argument('<object>', "for example an account name, or '*'")
    .action(async function canI(action: string, resource: string, object: string) {
      const { client } = await ctx.client();
      ctx.print((await client.canI(action, resource, object)) ? 'yes' : 'no');
    });
}

function registerPasswordCommand(account: Command, ctx: CliContext): void {
  account
    .command('update-password')
    .description("change an account's password (default: the logged-in user)")
    .option('--account <name>', 'the account')
    .option('--current-password <password>', 'the password of the logged-in user')
    .option('--new-password <password>', 'the new password')
    .action(async function updatePassword(options: PasswordOptions) {
      await runUpdatePassword(ctx, options);
    });
}

async function runUpdatePassword(ctx: CliContext, options: PasswordOptions): Promise<void> {
  const { client, target } = await ctx.client();
  const me = await currentUser(client);
  const name = options.account ?? me;
  const currentPassword = await valueOrPrompt(
    options.currentPassword,
    () => ctx.prompt.password(`*** Enter password of currently logged in user (${me}): `, '--current-password'),
    'the current password',
  );
  const newPassword = await valueOrPrompt(options.newPassword, () => askNewPassword(ctx, name), 'the new password');
  const fresh = await client.updatePassword({ name, currentPassword, newPassword });
  ctx.print('Password updated');
  // The change ends every session of that account, ours included. The server hands a session
  // caller a fresh token; keep the stored context working with it, or by logging in again
  // (what argocd does) when the server sent none. A token from a flag or env is not ours to replace.
  if (name !== me || target.tokenSource !== 'config') return;
  const token = fresh ?? (await newSession(ctx, target, name, newPassword));
  await updateConfig(ctx.configFile(), (config) => withLogin(config, { server: target.server, insecure: target.insecure, token }));
  ctx.print(`Context '${target.server}' updated`);
}

async function askNewPassword(ctx: CliContext, name: string): Promise<string> {
  const first = await ctx.prompt.password(`*** Enter new password for user ${name}: `, '--new-password');
  const second = await ctx.prompt.password(`*** Confirm new password for user ${name}: `, '--new-password');
  if (first !== second) throw new CliError('the two new passwords do not match');
  return first;
}

function newSession(ctx: CliContext, target: Target, username: string, password: string): Promise<string> {
  return ctx.clientFor({ server: target.server, insecure: target.insecure }).createSession(username, password);
}

function registerTokenCommands(account: Command, ctx: CliContext): void {
  account
    .command('generate-token')
    .description('create an API token and print it (default: for the logged-in user; a single sign-on user gets a personal API token)')
    .option('--account <name>', 'the account (needs the apiKey capability)')
    .option('--id <id>', 'the token id (default: generated by the server)')
    .option('--name <name>', `single sign-on users: a name to recognise the token by (default: '${DEFAULT_SSO_TOKEN_NAME}')`)
    .option('-e, --expires-in <duration>', 'lifetime such as 30m, 24h or 7d; 0 never expires (default: 0); required for single sign-on users')
    .action(async function generateToken(options: TokenOptions) {
      const expiresIn = parseExpiresIn(options.expiresIn ?? '0');
      const { client } = await ctx.client();
      const info = options.account === undefined ? await client.userInfo() : undefined;
      if (info !== undefined && isSingleSignOn(info)) {
        if (expiresIn === 0) throw new CliError('--expires-in is required for single sign-on users: their tokens always expire (at most users.ssoTokens.maxLifetime of the server)');
        ctx.print(await client.createSsoToken(options.name ?? DEFAULT_SSO_TOKEN_NAME, expiresIn));
        return;
      }
      const name = options.account ?? (await currentUser(client, info));
      const token = await client.generateToken(name, {
        ...(options.id !== undefined ? { id: options.id } : {}),
        expiresIn,
      });
      ctx.print(token);
    });
  account
    .command('delete-token')
    .description('revoke one API token (default: of the logged-in user)')
    .argument('<id>', 'the token id, as shown by `svc account get`')
    .option('--account <name>', 'the account')
    .action(async function deleteToken(id: string, options: AccountOption) {
      const { client } = await ctx.client();
      const info = options.account === undefined ? await client.userInfo() : undefined;
      if (info !== undefined && isSingleSignOn(info)) {
        await client.deleteSsoToken(id);
        return;
      }
      const name = options.account ?? (await currentUser(client, info));
      await client.deleteToken(name, id);
    });
}

/** The logged-in user's name, from the server (the token alone is not trusted for it). */
export async function currentUser(client: ApiClient, known?: UserInfo): Promise<string> {
  const info = known ?? (await client.userInfo());
  if (!info.loggedIn || info.username === undefined || info.username === '') {
    // userinfo answers loggedIn: false instead of 401 for a token it does not accept.
    const why = client.hasToken ? 'the server does not accept the token (expired, revoked or deleted)' : 'not logged in';
    throw new ApiError(401, 'unauthenticated', why, client.server);
  }
  return info.username;
}

/** Whether the caller logged in through single sign-on (or with an SSO user's token): no local account. */
function isSingleSignOn(info: UserInfo): boolean {
  return info.loggedIn && info.iss !== undefined && info.iss !== LOCAL_ISSUER;
}

/** The logged-in user as a local account; an SSO user has none, and is told what to use. */
async function localUser(client: ApiClient): Promise<string> {
  const info = await client.userInfo();
  const name = await currentUser(client, info);
  if (info.iss !== undefined && info.iss !== LOCAL_ISSUER) {
    const shown = info.displayName !== undefined ? `'${info.displayName}' (${name})` : `'${name}'`;
    throw new CliError(`${shown} logged in through single sign-on and has no local account: use 'svc account get-user-info' (or --account <name> for a local account)`);
  }
  return name;
}

const DURATION = /^(?:\d+[smhd])+$/;
const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `--expires-in`: `0` or whole seconds, or a duration of s/m/h/d parts (`1d12h`); seconds out. */
export function parseExpiresIn(text: string): number {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (!DURATION.test(trimmed)) {
    throw new CliError(`--expires-in: '${text}' is not a duration (for example 30m, 24h, 7d, or 0 for no expiry)`);
  }
  let seconds = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)([smhd])/g)) {
    seconds += Number(amount) * (UNIT_SECONDS[unit ?? ''] ?? 0);
  }
  return seconds;
}
