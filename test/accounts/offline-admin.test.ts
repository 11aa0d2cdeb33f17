/** accounts/offline-admin: break-glass account changes, checked with the settings' own parser, each with one audit event. */
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createOfflineAccountAdmin, secondFactorKeys, type OfflineAccountAdmin } from '../../src/accounts/offline-admin.js';
import { openDirStore, type DirStore } from '../../src/config/dir-store.js';
import { AccountNotFound, Conflict, InvalidRequest, Unavailable } from '../../src/errors.js';
import { accountsConfigDir, editConfigMap } from '../helpers/accounts-fixture.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';

const NOW = Date.parse('2026-03-01T10:00:00.250Z');

describe('accounts/offline-admin', function () {
  this.timeout(20_000);
  let dir: string;
  let store: DirStore;
  let audit: CollectedAudit;
  let admin: OfflineAccountAdmin;
  let waited: number[];

  async function open(extra: Parameters<typeof accountsConfigDir>[0] = {}): Promise<void> {
    dir = accountsConfigDir(extra);
    store = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
    audit = collectAudit();
    waited = [];
    admin = createOfflineAccountAdmin({ store, audit, storeKind: 'directory', location: dir, now: () => NOW, wait: async (ms) => void waited.push(ms) });
  }
  const secretData = (): Readonly<Record<string, string>> => store.current().secrets.get('svc-secret')?.data ?? {};
  const cmData = (): Readonly<Record<string, string>> => store.current().configMaps.get('svc-cm')?.data ?? {};
  const file = (name: string): string => readFileSync(join(dir, name), 'utf8');
  async function refusal(run: () => Promise<unknown>): Promise<Error> {
    try {
      await run();
    } catch (err: unknown) {
      return err as Error;
    }
    throw new Error('expected a refusal');
  }

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('set-password', () => {
    it('writes a hash of the new password and a whole-second passwordMtime once that second has begun, keeping the rest of the file', async () => {
      await open();
      const report = await admin.setPassword('bob', 'new-pass-123');
      expect(await bcrypt.compare('new-pass-123', secretData()['accounts.bob.password'] ?? '')).to.equal(true);
      expect(secretData()['accounts.bob.passwordMtime']).to.equal('2026-03-01T10:00:01.000Z');
      expect(waited, 'waited until the mtime second began').to.deep.equal([750]);
      expect(file('svc-secret.yaml')).to.include('operator.note: keep me # an operator comment');
      expect(report.join('\n')).to.include("account 'bob': accounts.bob.passwordMtime = 2026-03-01T10:00:01.000Z; its sessions issued before then end");
      const [event] = audit.of('account-password-set');
      expect(event).to.deep.include({ category: 'iam', type: 'change', outcome: 'success', user: { name: 'bob' }, svc: { command: 'account set-password', store: 'directory', location: dir } });
      expect(JSON.stringify(audit.events)).not.to.include('new-pass-123').and.not.to.include(secretData()['accounts.bob.password']);
    });

    it("writes admin's password under admin.*", async () => {
      await open();
      await admin.setPassword('admin', 'admin-new-pass');
      expect(await bcrypt.compare('admin-new-pass', secretData()['admin.password'] ?? '')).to.equal(true);
      expect(secretData()['admin.passwordMtime']).to.equal('2026-03-01T10:00:01.000Z');
    });

    it('refuses an unknown account, writes nothing and records the failure', async () => {
      await open();
      const before = file('svc-secret.yaml');
      const err = await refusal(() => admin.setPassword('mallory', 'new-pass-123'));
      expect(err).to.be.instanceOf(AccountNotFound);
      expect(err.message).to.equal("account 'mallory' does not exist");
      expect(file('svc-secret.yaml')).to.equal(before);
      expect(audit.of('account-password-set')).to.deep.equal([
        { category: 'iam', type: 'change', action: 'account-password-set', outcome: 'failure', reason: "account 'mallory' does not exist", user: { name: 'mallory' }, svc: { command: 'account set-password', store: 'directory', location: dir } },
      ]);
    });

    it('refuses a password the API would refuse, with its message', async () => {
      await open();
      const err = await refusal(() => admin.setPassword('bob', 'short'));
      expect(err).to.be.instanceOf(InvalidRequest);
      expect(err.message).to.equal('the new password must be at least 8 characters and at most 72 bytes long');
    });

    it('refuses when the settings would not take the account after the write (they would keep the old password)', async () => {
      await open({ secret: { 'accounts.bob.tokens': 'not json' } });
      const before = file('svc-secret.yaml');
      const err = await refusal(() => admin.setPassword('bob', 'new-pass-123'));
      expect(err).to.be.instanceOf(Unavailable);
      expect(err.message).to.match(/^account 'bob' cannot be changed: svc-secret: accounts\.bob\.tokens: is not JSON\. /);
      expect(file('svc-secret.yaml')).to.equal(before);
    });
  });

  describe('disable and enable', () => {
    it('disable writes sessionsNotBefore and accounts.<name>.enabled "false", keeps svc-cm as it was written, and a second run changes nothing', async () => {
      await open();
      editConfigMap(dir, (text) => `# svc-cm: the operator's\n${text.replace('accounts.bob: login', 'accounts.bob: login   # bob from ops')}`);
      await store.reload();
      const report = await admin.disable('bob');
      expect(cmData()['accounts.bob.enabled']).to.equal('false');
      expect(store.current().configMaps.get('svc-cm')?.data['accounts.bob.enabled']).to.equal('false');
      const text = file('svc-cm.yaml');
      expect(text).to.match(/^# svc-cm: the operator's\n/);
      expect(text).to.include('accounts.bob: login   # bob from ops\n');
      expect(text).to.include('accounts.bob.enabled: "false"');
      expect(report).to.deep.equal([
        "account 'bob': accounts.bob.sessionsNotBefore = 2026-03-01T10:00:01.000Z; its sessions issued before then end",
        `account 'bob': svc-cm accounts.bob.enabled = "false"; it cannot log in, and its API tokens are refused while it is disabled`,
      ]);
      // Written too, for the case no server sees the disable before an enable (no record of it then).
      expect(secretData()['accounts.bob.sessionsNotBefore']).to.equal('2026-03-01T10:00:01.000Z');
      expect(await admin.disable('bob')).to.deep.equal([`account 'bob' was already disabled (svc-cm accounts.bob.enabled is "false"); nothing changed`]);
      expect(file('svc-cm.yaml')).to.equal(text);
      expect(audit.of('account-disabled').map((e) => e.outcome)).to.deep.equal(['success', 'success']);
    });

    it('enable turns the switch on again; admin gets admin.enabled turned on too', async () => {
      await open({ cm: { 'admin.enabled': 'false' } });
      expect(await admin.enable('dave')).to.deep.equal([`account 'dave': svc-cm accounts.dave.enabled = "true"`, `account 'dave' is enabled; sessions and tokens issued before it was disabled stay refused`]);
      expect(cmData()['accounts.dave.enabled']).to.equal('true');
      await admin.enable('admin');
      expect(cmData()['admin.enabled']).to.equal('true');
      expect(await admin.enable('alice')).to.deep.equal([`account 'alice' was already enabled; nothing changed`]);
      expect(audit.of('account-enabled').map((e) => [e.user?.name, e.outcome])).to.deep.equal([['dave', 'success'], ['admin', 'success'], ['alice', 'success']]);
    });

    it('refuses an unknown account without writing svc-cm', async () => {
      await open();
      const before = file('svc-cm.yaml');
      const err = await refusal(() => admin.disable('mallory'));
      expect(err).to.be.instanceOf(AccountNotFound);
      expect(file('svc-cm.yaml')).to.equal(before);
      expect(audit.of('account-disabled')[0]).to.deep.include({ outcome: 'failure', reason: "account 'mallory' does not exist" });
    });

    it('refuses a change after which the settings would refuse the account (another key of it is bad)', async () => {
      await open({ cm: { 'accounts.bob': 'login, sudo' } });
      const before = file('svc-cm.yaml');
      const err = await refusal(() => admin.disable('bob'));
      expect(err).to.be.instanceOf(Unavailable);
      expect(err.message).to.match(/^account 'bob' cannot be changed: svc-cm: accounts\.bob: unknown capability 'sudo' \(want apiKey, login\)\. /);
      expect(file('svc-cm.yaml')).to.equal(before);
    });
  });

  describe('reset-second-factor', () => {
    it("removes the account's mfa keys (not those of a longer name sharing the prefix) and writes sessionsNotBefore", async () => {
      await open({
        cm: { 'accounts.bob.x': 'login' },
        secret: { 'mfa.bob.totp': 'sealed', 'mfa.bob.recovery': '[]', 'mfa.bob.x.totp': 'other', 'mfa.alice.totp': 'hers' },
      });
      const report = await admin.resetSecondFactor('bob');
      const data = secretData();
      expect(Object.keys(data).filter((k) => k.startsWith('mfa.')).sort()).to.deep.equal(['mfa.alice.totp', 'mfa.bob.x.totp']);
      expect(data['accounts.bob.sessionsNotBefore']).to.equal('2026-03-01T10:00:01.000Z');
      expect(data['operator.note']).to.equal('keep me');
      expect(report[0]).to.equal("account 'bob': removed 2 second-factor key(s) from svc-secret: mfa.bob.recovery, mfa.bob.totp");
      expect(audit.of('second-factor-reset')[0]).to.deep.include({ category: 'iam', type: 'deletion', outcome: 'success', user: { name: 'bob' } });
    });

    it('uses admin.sessionsNotBefore for admin', async () => {
      await open({ secret: { 'mfa.admin.totp': 'sealed' } });
      await admin.resetSecondFactor('admin');
      expect(secretData()['admin.sessionsNotBefore']).to.equal('2026-03-01T10:00:01.000Z');
      expect(secretData()['mfa.admin.totp']).to.equal(undefined);
    });
  });

  describe('create', () => {
    it('adds accounts.<name> with the capabilities and removes what a former account of that name left in svc-secret', async () => {
      await open({ secret: { 'accounts.erin.password': 'old-hash', 'accounts.erin.tokens': '[]', 'mfa.erin.totp': 'old' } });
      const report = await admin.create('erin', 'login, apiKey,login');
      expect(cmData()['accounts.erin']).to.equal('login, apiKey');
      expect(Object.keys(secretData()).filter((k) => k.includes('erin'))).to.deep.equal([]);
      expect(report).to.deep.equal([
        "account 'erin': removed what a former account of that name left in svc-secret: accounts.erin.password, accounts.erin.tokens, mfa.erin.totp",
        `account 'erin': svc-cm accounts.erin = "login, apiKey"`,
        "account 'erin' has no password yet: set one with svc-server account set-password erin",
      ]);
      expect(audit.of('account-created')[0]).to.deep.include({ category: 'iam', type: 'creation', outcome: 'success', user: { name: 'erin' } });
    });

    it('refuses an existing account, admin, an invalid name and an unknown capability, writing nothing', async () => {
      await open();
      const before = file('svc-cm.yaml');
      const cases: [string, string, new (...args: never[]) => Error, string][] = [
        ['bob', 'login', Conflict, "account 'bob' already exists (svc-cm accounts.bob)"],
        ['admin', 'login', Conflict, "account 'admin' already exists (built in)"],
        ['Bad_Name', 'login', InvalidRequest, "username 'Bad_Name' must be lower-case letters, digits, '-', '.' or '_', starting and ending with a letter or digit"],
        ['erin', ' , ', InvalidRequest, '--capabilities: give at least one of login, apiKey (comma-separated)'],
      ];
      for (const [name, caps, type, message] of cases) {
        const err = await refusal(() => admin.create(name, caps));
        expect(err, name).to.be.instanceOf(type);
        expect(err.message, name).to.equal(message);
      }
      const unknown = await refusal(() => admin.create('erin', 'login,sudo'));
      expect(unknown.message).to.match(/^account 'erin' cannot be changed: svc-cm: accounts\.erin: unknown capability 'sudo' \(want apiKey, login\)\. /);
      expect(file('svc-cm.yaml')).to.equal(before);
      expect(audit.of('account-created').map((e) => e.outcome)).to.deep.equal(['failure', 'failure', 'failure', 'failure', 'failure']);
    });

    it('creates svc-cm when the directory has none', async () => {
      await open();
      rmSync(join(dir, 'svc-cm.yaml'));
      await store.reload();
      await admin.create('erin', 'login');
      expect(cmData()).to.deep.equal({ 'accounts.erin': 'login' });
    });
  });
});

describe('accounts/offline-admin secondFactorKeys', () => {
  it('attributes each key to the longest defined account name it starts with; a name no longer defined does not keep its keys', () => {
    const keys = ['mfa.bob.totp', 'mfa.bob.x.totp', 'mfa.bob.x.y.totp', 'mfa.bobby.totp'];
    expect(secondFactorKeys('bob', keys, new Set(['bob', 'bob.x', 'bobby']))).to.deep.equal(['mfa.bob.totp']);
    expect(secondFactorKeys('bob.x', keys, new Set(['bob', 'bob.x']))).to.deep.equal(['mfa.bob.x.totp', 'mfa.bob.x.y.totp']);
    expect(secondFactorKeys('bob', keys, new Set(['bob']))).to.deep.equal(['mfa.bob.totp', 'mfa.bob.x.totp', 'mfa.bob.x.y.totp']);
  });
});
