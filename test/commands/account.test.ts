/** `svc-server account …` on a config dir: the password's ways in, the lock, the messages and exit codes. */
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { chownSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import YAML from 'yaml';
import { runAccountCommand, type AccountCommand } from '../../src/commands/account.js';
import { accountsConfigDir } from '../helpers/accounts-fixture.js';
import { collectAudit } from '../helpers/audit.js';
import { runEntry, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';
import { textSink } from '../helpers/text-sink.js';


/** svc-secret's values as stored in the file (the fixture writes stringData; writes add data). */
function storedSecret(dir: string): Record<string, string> {
  const doc = YAML.parse(readFileSync(join(dir, 'svc-secret.yaml'), 'utf8')) as { data?: Record<string, string>; stringData?: Record<string, string> };
  const data = Object.fromEntries(Object.entries(doc.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  return { ...data, ...doc.stringData };
}

async function run(dir: string, command: AccountCommand, stdin?: string) {
  const out = textSink();
  const err = textSink();
  const audit = collectAudit();
  const code = await runAccountCommand(dir, command, { out: out.stream, err: err.stream, audit, ...(stdin !== undefined ? { stdin: Readable.from([stdin]) } : {}) });
  return { code, out: out.text(), err: err.text(), audit };
}

describe('commands/account (svc-server account …, --config)', function () {
  this.timeout(30_000);
  cleanUpTempDirs();
  // The commands' audit lines go to a file, not to the stderr these tests read (e2e/audit-offline.test.ts).
  let auditLog: string;
  before(() => (auditLog = join(makeTempDir('svc-audit-'), 'audit.log')));
  const cliEnv = (): NodeJS.ProcessEnv => ({ ...process.env, SVC_AUDIT_LOG: auditLog });
  let dir: string;
  beforeEach(() => (dir = accountsConfigDir()));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('set-password reads the password from standard input through the real command line, and prints what changed', async () => {
    const { code, stdout, stderr } = await runEntry(SERVER_ENTRY, ['account', 'set-password', 'bob', '--config', dir], cliEnv(), 'fresh-pass-9\n');
    expect(code, stderr).to.equal(0);
    expect(stdout).to.match(/^account 'bob': new password hash written to svc-secret accounts\.bob\.password\naccount 'bob': accounts\.bob\.passwordMtime = \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z; its sessions issued before then end\n$/);
    expect(await bcrypt.compare('fresh-pass-9', storedSecret(dir)['accounts.bob.password'] ?? '')).to.equal(true);
    expect(stdout + stderr).not.to.include('fresh-pass-9');
  });

  it('refuses an unknown name, a missing store and a password given as an argument (without echoing it), with a non-zero exit naming what was wrong', async () => {
    const unknown = await runEntry(SERVER_ENTRY, ['account', 'disable', 'mallory', '--config', dir], cliEnv());
    expect([unknown.code, unknown.stdout, unknown.stderr]).to.deep.equal([1, '', "svc-server account disable: account 'mallory' does not exist\n"]);
    const nowhere = await runEntry(SERVER_ENTRY, ['account', 'enable', 'bob'], { ...cliEnv(), SVC_STORE: '' });
    expect([nowhere.code, nowhere.stderr]).to.deep.equal([1, 'svc-server: account enable: give --config <dir>, or --kube\n']);
    const asArgument = await runEntry(SERVER_ENTRY, ['account', 'set-password', 'bob', 'typed-pass-1', '--config', dir], cliEnv());
    expect([asArgument.code, asArgument.stderr]).to.deep.equal([
      1,
      'svc-server: account set-password: takes one argument, the account name; 2 were given (the password is never one: ps and shell history would show it; give it on standard input or with --password-file)\n',
    ]);
  });

  it('set-password takes the password from --password-file, one trailing line break being the file\'s', async () => {
    const file = join(dir, '..', `pw-${process.pid}`);
    writeFileSync(file, 'from-a-file-1\r\n');
    try {
      const result = await run(dir, { command: 'set-password', name: 'alice', passwordFile: file });
      expect(result.code, result.err).to.equal(0);
      expect(await bcrypt.compare('from-a-file-1', storedSecret(dir)['accounts.alice.password'] ?? '')).to.equal(true);
      expect(result.audit.of('account-password-set')[0]?.outcome).to.equal('success');
    } finally {
      rmSync(file, { force: true });
    }
  });

  it('refuses a password input that is not one line, or is empty, or too short, and writes nothing', async () => {
    const before = readFileSync(join(dir, 'svc-secret.yaml'), 'utf8');
    const cases: [string, string][] = [
      ['two-lines-1\nsecond-line\n', 'standard input holds more than one line; give the password alone, on one line'],
      ['', 'no password in standard input'],
      ['short\n', 'the new password must be at least 8 characters and at most 72 bytes long'],
    ];
    for (const [stdin, message] of cases) {
      const result = await run(dir, { command: 'set-password', name: 'bob' }, stdin);
      expect([result.code, result.out, result.err], JSON.stringify(stdin)).to.deep.equal([1, '', `svc-server account set-password: ${message}\n`]);
    }
    const missing = await run(dir, { command: 'set-password', name: 'bob', passwordFile: join(dir, 'no-such-file') });
    expect(missing.code).to.equal(1);
    expect(missing.err).to.include('no-such-file');
    expect(readFileSync(join(dir, 'svc-secret.yaml'), 'utf8')).to.equal(before);
  });

  it('waits for the lock the server takes on the file it writes, and writes after it is released', async () => {
    for (const [file, command] of [
      ['svc-secret.yaml', { command: 'reset-second-factor', name: 'bob' }],
      ['svc-cm.yaml', { command: 'disable', name: 'bob' }],
    ] as const) {
      const lock = join(dir, `${file}.lock`);
      writeFileSync(lock, '4242 another-writer\n'); // fresh, so not stale: it must be waited for
      let done = false;
      const running = run(dir, command).finally(() => (done = true));
      await new Promise((r) => setTimeout(r, 600));
      expect(done, `${command.command} wrote while ${file} was locked`).to.equal(false);
      rmSync(lock);
      const result = await running;
      expect(result.code, result.err).to.equal(0);
    }
    expect(storedSecret(dir)['accounts.bob.sessionsNotBefore']).to.match(/^\d{4}-.*\.000Z$/);
    expect(readFileSync(join(dir, 'svc-cm.yaml'), 'utf8')).to.include('accounts.bob.enabled: "false"');
  });

  it('refuses to write a file another user owns (the new file would be this user\'s, unreadable to the server)', async function () {
    if (process.getuid?.() !== 0) this.skip(); // only root can give a file to another user; CI runs as root
    chownSync(join(dir, 'svc-secret.yaml'), 65534, 65534);
    const before = readFileSync(join(dir, 'svc-secret.yaml'), 'utf8');
    const result = await run(dir, { command: 'reset-second-factor', name: 'bob' });
    expect([result.code, result.err]).to.deep.equal([
      1,
      `svc-server account reset-second-factor: ${join(dir, 'svc-secret.yaml')} belongs to uid 65534 and this command runs as uid 0: the write would leave it owned by uid 0, which the server may not read; run the command as uid 65534\n`,
    ]);
    expect(readFileSync(join(dir, 'svc-secret.yaml'), 'utf8')).to.equal(before);
  });

  it('create, enable and disable report what they changed on stdout', async () => {
    const created = await run(dir, { command: 'create', name: 'erin', capabilities: 'login,apiKey' });
    expect([created.code, created.out]).to.deep.equal([0, `account 'erin': svc-cm accounts.erin = "login, apiKey"\naccount 'erin' has no password yet: set one with svc-server account set-password erin\n`]);
    const again = await run(dir, { command: 'create', name: 'erin', capabilities: 'login' });
    expect([again.code, again.err]).to.deep.equal([1, "svc-server account create: account 'erin' already exists (svc-cm accounts.erin)\n"]);
    const enabled = await run(dir, { command: 'enable', name: 'dave' });
    expect(enabled.out).to.equal(`account 'dave': svc-cm accounts.dave.enabled = "true"\naccount 'dave' is enabled; sessions and tokens issued before it was disabled stay refused\n`);
    expect(enabled.audit.of('account-enabled')[0]).to.deep.include({ outcome: 'success', svc: { command: 'account enable', store: 'directory', location: dir } });
  });
});
