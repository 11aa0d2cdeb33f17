/**
 * `svc account second-factor status`: what the logged-in account has on (GET
 * /api/v1/account/second-factor). `disable`: turns TOTP off (DELETE …/totp) with the recent proof
 * the API takes, the password and a code (the app's or a recovery code); the server then ends
 * every session of the account, the CLI's own too.
 *
 * `svc account second-factor enable-totp`: enrols an authenticator app for the logged-in
 * account. Takes the account's password (`--password`, else asked on a terminal) and, when a
 * passkey is already on, a code of it (`--otp`: a recovery code, as a passkey cannot answer in a
 * terminal). Prints the otpauth:// URI, a QR code of it for the terminal and the secret, reads a
 * code from the app (a terminal prompt, or one line of standard input in a script), and prints
 * the ten recovery codes: the only time they are shown. The account's other sessions end.
 */
import type { Command } from 'commander';
import QRCode from 'qrcode';
import type { CliContext } from '../context.js';
import { CliError } from '../errors.js';
import { parseOutputFormat, renderSecondFactorStatus } from '../output.js';
import { readLine, valueOrPrompt } from '../prompt.js';

interface EnableTotpOptions {
  readonly password?: string;
  readonly otp?: string;
}

interface StatusOptions {
  readonly output?: string;
}

export function registerSecondFactor(account: Command, ctx: CliContext): void {
  const second = account.command('second-factor').description("manage the logged-in account's second factor");
  second
    .command('enable-totp')
    .description('enrol an authenticator app (TOTP): shows a QR code, reads a code from the app, prints the recovery codes once; ends the account\'s other sessions')
    .option('--password <password>', 'the password of the logged-in account (asked for on a terminal)')
    .option('--otp <code>', 'a recovery code, when the account already has a passkey (asked for on a terminal)')
    .action(async function enableTotp(options: EnableTotpOptions) {
      const { client } = await ctx.client();
      const password = await valueOrPrompt(options.password, () => ctx.prompt.password('*** Enter the password of the logged-in account: ', '--password'), 'the password');
      const status = await client.secondFactorStatus();
      const proofCode = status.passkeys.length > 0 ? await valueOrPrompt(options.otp?.trim(), () => ctx.prompt.text('A recovery code (the account has a passkey): ', '--otp'), 'the second-factor code') : undefined;
      const { secret, uri } = await client.startTotp({ password, ...(proofCode !== undefined ? { code: proofCode } : {}) });
      ctx.print('Scan this QR code with an authenticator app, or enter the secret by hand:');
      const qr = await QRCode.toString(uri, { type: 'terminal', small: true });
      ctx.io.stdout.write(qr.endsWith('\n') ? qr : `${qr}\n`);
      ctx.print(uri);
      ctx.print(`Secret: ${secret}`);
      const code = ctx.io.stdin.isTTY === true ? await ctx.prompt.text('Code from the app: ', '--code') : await readLine(ctx.io.stdin);
      if (code.trim() === '') throw new CliError('no code was given: TOTP is not enabled (run the command again)');
      const codes = await client.confirmTotp(code.trim());
      ctx.print('TOTP is enabled. Recovery codes (each works once; they are not shown again, keep them somewhere safe):');
      for (const recovery of codes) ctx.print(`  ${recovery}`);
    });
  registerStatusAndDisable(second, ctx);
}

function registerStatusAndDisable(second: Command, ctx: CliContext): void {
  second
    .command('status')
    .description('show what second factor the logged-in account has on: TOTP, passkeys, recovery codes left')
    .option('-o, --output <format>', 'json or yaml')
    .action(async function showStatus(options: StatusOptions) {
      const format = parseOutputFormat(options.output);
      const { client } = await ctx.client();
      ctx.io.stdout.write(renderSecondFactorStatus(format, await client.secondFactorStatus()));
    });
  second
    .command('disable')
    .description("turn TOTP off: takes the password and a code (the app's or a recovery code); ends every session of the account, this one too")
    .option('--password <password>', 'the password of the logged-in account (asked for on a terminal)')
    .option('--otp <code>', 'a code from the authenticator app, or a recovery code (asked for on a terminal)')
    .action(async function disableTotp(options: EnableTotpOptions) {
      const { client, target } = await ctx.client();
      const password = await valueOrPrompt(options.password, () => ctx.prompt.password('*** Enter the password of the logged-in account: ', '--password'), 'the password');
      const code = await valueOrPrompt(options.otp?.trim(), () => ctx.prompt.text('Code from the authenticator app (or a recovery code): ', '--otp'), 'the second-factor code');
      await client.removeTotp({ password, code });
      ctx.print(`TOTP is disabled. Every session of the account has ended, this one too: run 'svc login ${target.server}'`);
    });
}
