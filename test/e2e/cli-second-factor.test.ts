/**
 * The CLI and a second factor, in-process against a real server: `svc account second-factor
 * enable-totp` (the password as its proof; URI, terminal QR code, a code read from standard
 * input, recovery codes once), then `svc login` with `--otp`, or refused without it when it
 * cannot ask; `status`, and `disable` with the password and a code.
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { run } from '../../src/cli/program.js';
import { codeAt } from '../../src/second-factor/totp.js';
import { accountsConfigDir, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fakeIo } from '../cli/fake-io.js';

describe('svc CLI with a second factor', function () {
  this.timeout(30_000);
  let dir: string;
  let home: string;
  let server: TestServer;
  let offset = 0;
  const now = () => Date.now() + offset;
  let secret = '';
  /** The code typed to enrol: its time step is used up. */
  let enrolCode = '';

  before(async function () {
    dir = accountsConfigDir();
    home = await mkdtemp(path.join(tmpdir(), 'svc-cli-mfa-'));
    server = await startTestServer(dir, { now });
  });
  after(async function () {
    await server.close();
    await rm(dir, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  });

  async function svc(args: string[], stdinLine?: (stdout: () => string) => Promise<string>) {
    const io = fakeIo({ HOME: home });
    const running = run(args, io.io);
    if (stdinLine !== undefined) (io.io.stdin as PassThrough).end(`${await stdinLine(io.stdout)}\n`);
    const code = await running;
    return { code, stdout: io.stdout(), stderr: io.stderr() };
  }

  it('refuses to enable TOTP without the password, or with a wrong one', async function () {
    expect((await svc(['login', server.url, '--username', 'alice', '--password', PASSWORDS.alice])).code).to.equal(0);
    const bare = await svc(['account', 'second-factor', 'enable-totp'], () => Promise.resolve(''));
    expect(bare).to.include({ code: 1, stderr: 'svc: --password is required (stdin is not a terminal, so svc cannot prompt for it)\n' });
    const wrong = await svc(['account', 'second-factor', 'enable-totp', '--password', 'wrong'], () => Promise.resolve(''));
    expect(wrong).to.include({ code: 1, stderr: 'svc: the password is incorrect\n' });
    expect(wrong.stdout).not.to.include('Secret:');
  });

  it('enables TOTP: prints the URI, a QR code and the secret, reads the code, prints ten recovery codes once', async function () {
    const enabled = await svc(['account', 'second-factor', 'enable-totp', '--password', PASSWORDS.alice], async (stdout) => {
      while (!/Secret: [A-Z2-7]+\n/.test(stdout())) await new Promise((r) => setTimeout(r, 20));
      secret = /Secret: ([A-Z2-7]+)\n/.exec(stdout())?.[1] ?? '';
      enrolCode = codeAt(secret, now());
      return enrolCode;
    });
    expect(enabled.stderr).to.equal('');
    expect(enabled.code).to.equal(0);
    expect(enabled.stdout).to.match(/^otpauth:\/\/totp\/.*alice\?.*secret=[A-Z2-7]{32}/m);
    expect(enabled.stdout).to.match(/[▀▄█]{8}/);
    const codes = enabled.stdout.split('\n').filter((l) => /^ {2}[a-z2-7]{5}-[a-z2-7]{5}$/.test(l));
    expect(codes).to.have.length(10);
  });

  it('right after enabling, refuses the code typed to enrol saying it was used and to wait for the next one', async function () {
    const again = await svc(['login', server.url, '--username', 'alice', '--password', PASSWORDS.alice, '--otp', enrolCode]);
    expect(again).to.include({ code: 1, stderr: 'svc: this code was already used; wait for the next one (a new code every 30 seconds) and log in again\n' });
  });

  it('logs in with --otp, and refuses a wrong code with one line', async function () {
    offset += 4 * 30_000;
    const wrong = await svc(['login', server.url, '--username', 'alice', '--password', PASSWORDS.alice, '--otp', codeAt(secret, now() - 600_000)]);
    expect(wrong).to.include({ code: 1, stderr: 'svc: invalid or already used second-factor code; log in again\n' });
    const ok = await svc(['login', server.url, '--username', 'alice', '--password', PASSWORDS.alice, '--otp', codeAt(secret, now())]);
    expect(ok.stderr).to.equal('');
    expect(ok).to.include({ code: 0 });
    expect(ok.stdout).to.include("'alice' logged in successfully");
    const who = await svc(['account', 'get-user-info', '-o', 'json']);
    expect(JSON.parse(who.stdout)).to.deep.include({ loggedIn: true, username: 'alice' });
  });

  it('asks for --otp when the server wants a code and stdin is not a terminal', async function () {
    const r = await svc(['login', server.url, '--username', 'alice', '--password', PASSWORDS.alice]);
    expect(r).to.include({ code: 1, stderr: 'svc: --otp is required (stdin is not a terminal, so svc cannot prompt for it)\n' });
  });

  it('shows the status, and disables TOTP only with the password and a code, ending every session of the account', async function () {
    const on = await svc(['account', 'second-factor', 'status']);
    expect(on).to.deep.equal({ code: 0, stderr: '', stdout: 'TOTP:            on\nPasskeys:        none\nRecovery codes:  10 left\nRequired:        no\n' });
    const json = await svc(['account', 'second-factor', 'status', '-o', 'json']);
    expect(JSON.parse(json.stdout)).to.deep.equal({ totp: true, passkeys: [], recoveryCodesLeft: 10, required: false });
    // The recent proof the API takes: the password and a code, both.
    const bare = await svc(['account', 'second-factor', 'disable', '--password', PASSWORDS.alice]);
    expect(bare).to.include({ code: 1, stderr: 'svc: --otp is required (stdin is not a terminal, so svc cannot prompt for it)\n' });
    offset += 4 * 30_000;
    const wrong = await svc(['account', 'second-factor', 'disable', '--password', PASSWORDS.alice, '--otp', codeAt(secret, now() - 600_000)]);
    expect(wrong).to.include({ code: 1, stderr: 'svc: the second-factor code is incorrect or already used\n' });
    const badPassword = await svc(['account', 'second-factor', 'disable', '--password', 'wrong', '--otp', codeAt(secret, now())]);
    expect(badPassword).to.include({ code: 1, stderr: 'svc: the password is incorrect\n' });
    const off = await svc(['account', 'second-factor', 'disable', '--password', PASSWORDS.alice, '--otp', codeAt(secret, now())]);
    expect(off).to.deep.equal({ code: 0, stderr: '', stdout: `TOTP is disabled. Every session of the account has ended, this one too: run 'svc login ${server.url}'\n` });
    expect((await svc(['account', 'get-user-info'])).code, 'the CLI\'s own session ended').to.equal(1);
    expect((await svc(['login', server.url, '--username', 'alice', '--password', PASSWORDS.alice])).code).to.equal(0);
    expect((await svc(['account', 'second-factor', 'status'])).stdout).to.match(/^TOTP: {12}off\n/);
  });
});
