/**
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
import { readLine, valueOrPrompt } from '../prompt.js';

interface EnableTotpOptions {
  readonly password?: string;
  readonly otp?: string;
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
}
