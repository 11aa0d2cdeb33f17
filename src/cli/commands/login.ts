/**
 * `svc login <server>`: exchanges a user name and password for a session token
 * (POST /api/v1/session) and stores it as the current context. Missing credentials are asked
 * for on a terminal; in a script they must be passed as flags. `--sso` logs in at the
 * server's identity provider instead (login-sso.ts). An account with a second factor is asked
 * for its code (or a recovery code) when the server says so; `--otp` gives it in a script.
 */
import type { Command } from 'commander';
import { updateConfig, withLogin } from '../config-file.js';
import { normalizeServer, type CliContext } from '../context.js';
import { CliError } from '../errors.js';
import { valueOrPrompt } from '../prompt.js';
import { runSsoLogin } from './login-sso.js';
import { runWorkloadLogin, wantsWorkloadLogin } from './login-workload.js';

interface LoginOptions {
  readonly username?: string;
  readonly password?: string;
  readonly otp?: string;
  readonly sso?: boolean;
  readonly ssoPort: string;
  readonly browser: boolean;
  readonly subjectTokenFile?: string;
  readonly githubActions?: boolean;
  readonly audience?: string;
}

export function registerLogin(program: Command, ctx: CliContext): void {
  program
    .command('login')
    .description('log in to a server and make it the current context')
    .argument('<server>', 'host:port or http(s)://host:port')
    .option('--username <name>', 'the account name')
    .option('--password <password>', 'the password (prompted for on a terminal when omitted)')
    .option('--otp <code>', 'the code of the second factor (authenticator app or recovery code), asked for on a terminal when the server wants one')
    .option('--sso', 'log in through single sign-on in a browser')
    .option('--sso-port <port>', 'local port for the SSO callback', '8085')
    .option('--no-browser', 'with --sso: log in on another device (device code) instead of a browser here')
    .option('--subject-token-file <file>', 'log in as a workload with this platform token (- for stdin; env SVC_SUBJECT_TOKEN)')
    .option('--github-actions', 'log in as a workload with the ID token of this GitHub Actions job')
    .option('--audience <audience>', 'with --github-actions: the audience to ask for (default: the server URL)')
    .action(async function login(server: string, options: LoginOptions) {
      await runLogin(ctx, server, options);
    });
}

async function runLogin(ctx: CliContext, serverText: string, options: LoginOptions): Promise<void> {
  const server = normalizeServer(serverText, ctx.options.plaintext === true);
  const insecure = ctx.options.insecure === true;
  if (wantsWorkloadLogin(options, ctx.io.env) && options.username === undefined && options.password === undefined && options.sso !== true) {
    if (!options.browser) throw new CliError('--no-browser goes with --sso');
    await runWorkloadLogin(ctx, {
      server,
      insecure,
      githubActions: options.githubActions === true,
      ...(options.subjectTokenFile !== undefined ? { subjectTokenFile: options.subjectTokenFile } : {}),
      ...(options.audience !== undefined ? { audience: options.audience } : {}),
    });
    return;
  }
  if (options.subjectTokenFile !== undefined || options.githubActions === true || options.audience !== undefined) {
    throw new CliError('--subject-token-file, --github-actions and --audience log in as a workload; leave out --username, --password and --sso');
  }
  if (options.sso === true) {
    if (options.username !== undefined || options.password !== undefined) {
      throw new CliError('--sso logs in at the identity provider; leave out --username and --password');
    }
    await runSsoLogin(ctx, { server, insecure, port: options.ssoPort, browser: options.browser });
    return;
  }
  if (!options.browser) throw new CliError('--no-browser goes with --sso');
  const username = await valueOrPrompt(options.username, () => ctx.prompt.text('Username: ', '--username'), 'the user name');
  const password = await valueOrPrompt(options.password, () => ctx.prompt.password('Password: ', '--password'), 'the password');
  const token = await ctx.clientFor({ server, insecure }).createSession(username, password, (factors) => askCode(ctx, factors, options.otp));
  await updateConfig(ctx.configFile(), (config) => withLogin(config, { server, insecure, token }));
  ctx.print(`'${username}' logged in successfully`);
  ctx.print(`Context '${server}' updated`);
}

/** The second factor's code: `--otp`, else asked on a terminal; a passkey-only account is sent to the browser. */
async function askCode(ctx: CliContext, factors: readonly string[], otp: string | undefined): Promise<string> {
  if (!factors.includes('totp') && !factors.includes('recovery')) {
    throw new CliError('this account logs in with a passkey only: log in on the login page in a browser, or enrol an authenticator app there');
  }
  return valueOrPrompt(otp?.trim(), () => ctx.prompt.text('Code from the authenticator app (or a recovery code): ', '--otp'), 'the second-factor code');
}
