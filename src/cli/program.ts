/**
 * The `svc` command tree (commander) and `run`, which executes one command line against
 * injected streams and environment and returns the exit code. Every failure ends here as one
 * line on stderr, `svc: <message>`, and exit code 1 (DESIGN.md §8); never a stack trace.
 */
import { Command, type HelpContext } from 'commander';
import { registerAccount } from './commands/account.js';
import { registerLogin } from './commands/login.js';
import { registerLogout } from './commands/logout.js';
import { registerSession } from './commands/session.js';
import { registerVersion } from './commands/version.js';
import { CliContext, type CliIo, type GlobalOptions } from './context.js';
import { CliError, reportError } from './errors.js';

/**
 * Commander answers a command line that stops before its sub-command (`svc`, `svc account`)
 * by printing the whole help on stderr with exit 1; DESIGN.md §8 wants one line. Commander
 * reports that case only through help({error: true}), so that call becomes a CliError here;
 * `--help` (no error context) still prints the help and exits 0. createCommand makes every
 * sub-command one of these too.
 */
class SvcCommand extends Command {
  override createCommand(name?: string): Command {
    return new SvcCommand(name);
  }

  // Both of commander's overloads: the context, or the deprecated text callback.
  override help(context?: HelpContext | ((text: string) => string)): never {
    if (typeof context === 'function') return super.help(context);
    if (context?.error === true) throw new CliError(`missing command (see ${commandPath(this)} --help)`);
    return super.help(context);
  }
}

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

export function buildProgram(io: CliIo): Command {
  const program = new SvcCommand('svc');
  program
    .description('command-line client of the svc server: log in, manage accounts and API tokens')
    .option('--server <address>', 'server address (env SVC_SERVER; default: the current context)')
    .option('--auth-token <token>', 'bearer token to use (env SVC_AUTH_TOKEN)')
    .option('--config <path>', 'config file (default: $HOME/.config/svc/config)')
    .option('--insecure', 'skip TLS certificate verification (self-signed servers)')
    .option('--plaintext', 'use http:// for a server given without a scheme')
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // run() prints the one-line error itself.
      outputError: () => undefined,
    });
  const ctx = new CliContext(io, () => program.opts<GlobalOptions>());
  registerLogin(program, ctx);
  registerLogout(program, ctx);
  registerAccount(program, ctx);
  registerSession(program, ctx);
  registerVersion(program, ctx);
  return program;
}

/** Runs one command line (arguments after the program name); resolves to the exit code. */
export async function run(args: readonly string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...args], { from: 'user' });
    return 0;
  } catch (err: unknown) {
    const report = reportError(err);
    if (report.line !== undefined) io.stderr.write(`svc: ${report.line}\n`);
    return report.exitCode;
  }
}
