/** `svc-server account … --kube`: every command writes svc-cm or svc-secret through the API, leaving other keys as they were. */
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runAccountCommand, type AccountCommand } from '../../src/commands/account.js';
import { collectAudit } from '../helpers/audit.js';
import { startFakeKube, type FakeKube } from '../helpers/fake-kube-apiserver.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { textSink } from '../helpers/text-sink.js';

const NS = 'svc';
const b64 = (v: string): string => Buffer.from(v).toString('base64');
const CONFIGMAP = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' } as const;
const SECRET = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret' } as const;

describe('commands/account --kube', function () {
  this.timeout(30_000);
  const ca = makeTestCa();
  let kube: FakeKube;
  let work: string;
  let kubeconfig: string;

  beforeEach(async () => {
    kube = await startFakeKube({ tls: ca });
    work = mkdtempSync(join(tmpdir(), 'svc-account-kube-'));
    kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, kube.kubeconfig(NS));
    kube.store.put(CONFIGMAP, NS, {
      metadata: { name: 'svc-cm', annotations: { 'operator/owner': 'ops' } },
      data: { 'accounts.bob': 'login', 'accounts.dave': 'login', 'accounts.dave.enabled': 'false', 'operator.setting': 'x' },
    });
    kube.store.put(SECRET, NS, {
      metadata: { name: 'svc-secret' },
      data: { 'server.secretkey': b64('k'.repeat(32)), 'operator.note': b64('keep me'), 'mfa.bob.totp': b64('sealed'), 'accounts.bob.password': b64('old-hash') },
    });
  });
  afterEach(async () => {
    await kube.close();
    rmSync(work, { recursive: true, force: true });
  });

  async function run(command: AccountCommand, stdin?: string) {
    const out = textSink();
    const err = textSink();
    const audit = collectAudit();
    const code = await runAccountCommand({ kubeconfig, namespace: NS }, command, { out: out.stream, err: err.stream, audit, ...(stdin !== undefined ? { stdin: Readable.from([stdin]) } : {}) });
    return { code, out: out.text(), err: err.text(), audit };
  }
  const cm = (): Record<string, string> => (kube.store.get('configmaps', NS, 'svc-cm')?.['data'] ?? {}) as Record<string, string>;
  const secret = (): Record<string, string> =>
    Object.fromEntries(Object.entries((kube.store.get('secrets', NS, 'svc-secret')?.['data'] ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

  it('disable, enable and create change svc-cm through the API; the other keys and the annotations stay', async () => {
    expect((await run({ command: 'disable', name: 'bob' })).code).to.equal(0);
    expect(cm()['accounts.bob.enabled']).to.equal('false');
    const enabled = await run({ command: 'enable', name: 'dave' });
    expect(enabled.code, enabled.err).to.equal(0);
    expect(cm()['accounts.dave.enabled']).to.equal('true');
    const created = await run({ command: 'create', name: 'erin', capabilities: 'apiKey' });
    expect(created.code, created.err).to.equal(0);
    expect(cm()).to.deep.equal({ 'accounts.bob': 'login', 'accounts.bob.enabled': 'false', 'accounts.dave': 'login', 'accounts.dave.enabled': 'true', 'accounts.erin': 'apiKey', 'operator.setting': 'x' });
    expect((kube.store.get('configmaps', NS, 'svc-cm')?.['metadata'] as { annotations?: unknown }).annotations).to.deep.equal({ 'operator/owner': 'ops' });
    expect(created.audit.of('account-created')[0]).to.deep.include({ outcome: 'success', svc: { command: 'account create', store: 'kubernetes', location: NS } });
  });

  it('set-password and reset-second-factor change svc-secret through the API; the other keys stay', async () => {
    const set = await run({ command: 'set-password', name: 'bob' }, 'kube-pass-123\n');
    expect(set.code, set.err).to.equal(0);
    expect(await bcrypt.compare('kube-pass-123', secret()['accounts.bob.password'] ?? '')).to.equal(true);
    const reset = await run({ command: 'reset-second-factor', name: 'bob' });
    expect(reset.code, reset.err).to.equal(0);
    expect(reset.out).to.include("account 'bob': removed 1 second-factor key(s) from svc-secret: mfa.bob.totp\n");
    const data = secret();
    expect(data['mfa.bob.totp']).to.equal(undefined);
    expect(data['accounts.bob.sessionsNotBefore']).to.match(/^\d{4}-.*\.000Z$/);
    expect(data['operator.note']).to.equal('keep me');
    expect(reset.audit.of('second-factor-reset')[0]).to.deep.include({ outcome: 'success', svc: { command: 'account reset-second-factor', store: 'kubernetes', location: NS } });
  });

  it('creates svc-cm when the namespace has none', async () => {
    kube.store.delete('configmaps', NS, 'svc-cm');
    const created = await run({ command: 'create', name: 'erin', capabilities: 'login' });
    expect(created.code, created.err).to.equal(0);
    expect(cm()).to.deep.equal({ 'accounts.erin': 'login' });
  });

  it('refuses an unknown name and writes nothing', async () => {
    const before = JSON.stringify([cm(), secret()]);
    for (const command of ['disable', 'enable', 'reset-second-factor'] as const) {
      const result = await run({ command, name: 'mallory' });
      expect([result.code, result.err]).to.deep.equal([1, `svc-server account ${command}: account 'mallory' does not exist\n`]);
    }
    expect(JSON.stringify([cm(), secret()])).to.equal(before);
  });

  it('says which verb the credentials lack when the API refuses the write', async () => {
    kube.rules = [{ verbs: ['get', 'list', 'watch'], resources: ['configmaps', 'secrets', 'applications'] }];
    const result = await run({ command: 'create', name: 'erin', capabilities: 'login' });
    expect(result.code).to.equal(1);
    expect(result.err).to.match(/^svc-server account create: ConfigMap svc-cm could not be written: the credentials used lack "update" on configmaps "svc-cm" \(the API server said: /);
    expect(cm()['accounts.erin']).to.equal(undefined);
  });
});
