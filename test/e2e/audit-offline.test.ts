/**
 * The offline `svc-server` commands record what they did, as real processes: to --audit-log or
 * SVC_AUDIT_LOG when given (appended, 0600), else to stderr (their stdout is their answer).
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INITIAL_ADMIN_SECRET } from '../../src/config/manifests.js';
import { registerAuditSecret } from '../audit-capture.js';
import { validAuditLines } from '../helpers/audit-schema.js';
import { secret, tempConfigDir } from '../helpers/manifests.js';
import { runEntry, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const INITIAL = 'initial-admin-pass-for-audit';
registerAuditSecret(INITIAL);

function configDir(): string {
  return tempConfigDir({
    'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'offline-audit-key-0123456789abcdef' }),
    'initial.yaml': secret(INITIAL_ADMIN_SECRET, { password: INITIAL }),
  });
}

describe('audit trail: offline administration commands', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const logDir = mkdtempSync(join(tmpdir(), 'svc-audit-offline-'));

  it('admin initial-password with --audit-log: the password alone on stdout, one event in the file, 0600, no password in it', async () => {
    const file = join(logDir, 'initial.log');
    const { code, stdout, stderr } = await runEntry(SERVER_ENTRY, ['admin', 'initial-password', '--config', configDir(), '--audit-log', file]);
    expect(code, stderr).to.equal(0);
    expect(stdout).to.equal(`${INITIAL}\n`);
    expect(stderr).to.not.include('"log.logger"');
    expect(stderr, 'no note when the events go to the file').to.not.include('audit event');
    const text = readFileSync(file, 'utf8');
    expect(text).to.not.include(INITIAL);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    const [line, ...more] = validAuditLines(text);
    expect(more).to.deep.equal([]);
    expect(line?.['event']).to.deep.include({ action: 'initial-password-read', outcome: 'success', category: ['iam'], type: ['info'] });
    expect(line?.['svc']).to.include({ command: 'admin initial-password' });
    expect((line?.['svc'] as Record<string, unknown>)['operator']).to.be.a('string');
  });

  it('idp rotate-keys with SVC_AUDIT_LOG: the keys added, by id, appended after what the file held', async () => {
    const file = join(logDir, 'rotate.log');
    const dir = configDir();
    const env = { ...process.env, SVC_AUDIT_LOG: file };
    const first = await runEntry(SERVER_ENTRY, ['idp', 'rotate-keys', '--config', dir], env);
    expect(first.code, first.stderr).to.equal(0);
    const second = await runEntry(SERVER_ENTRY, ['idp', 'rotate-keys', '--config', dir], env);
    expect(second.code, second.stderr).to.equal(0);
    const lines = validAuditLines(readFileSync(file, 'utf8'));
    expect(lines).to.have.length(2);
    const added = [first.stdout, second.stdout].map((out) => /added signing key (\S+);/.exec(out)?.[1]);
    expect(lines.map((l) => (l['svc'] as Record<string, unknown>)['addedKey'])).to.deep.equal(added);
    expect(lines[1]?.['svc']).to.deep.include({ command: 'idp rotate-keys', trigger: 'command', configDir: dir, retiredKeys: [added[0]] });
    expect(lines[1]?.['event']).to.deep.include({ action: 'signing-keys-rotated', outcome: 'success', category: ['configuration'] });
  });

  it('without a file the event goes to stderr, a failure with its reason', async () => {
    const dir = tempConfigDir({ 'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }) });
    const { code, stdout, stderr } = await runEntry(SERVER_ENTRY, ['admin', 'initial-password', '--config', dir], { ...process.env, SVC_AUDIT_LOG: '' });
    expect([code, stdout]).to.deep.equal([1, '']);
    const [auditLine, ...message] = stderr.split('\n').sort((a, b) => Number(b.startsWith('{')) - Number(a.startsWith('{')));
    const [line] = validAuditLines(auditLine ?? '');
    expect(line?.['event']).to.deep.include({ action: 'initial-password-read', outcome: 'failure', reason: `Secret ${INITIAL_ADMIN_SECRET} not found in ${dir}` });
    expect(message.join('\n')).to.include('it is written by the first start only');
    // Said once, after the line: what it is, and where it could go instead.
    expect(message.filter((l) => l.includes('audit event'))).to.deep.equal([
      "svc-server: the JSON line above is this command's audit event (docs/audit.md), written to stderr for want of an audit log: pass --audit-log FILE or set SVC_AUDIT_LOG to append them to the server's audit trail",
    ]);
  });

  it('an audit log that cannot be opened stops the command, naming the option and the path', async () => {
    const file = join(logDir, 'missing', 'audit.log');
    const { code, stdout, stderr } = await runEntry(SERVER_ENTRY, ['admin', 'initial-password', '--config', configDir(), '--audit-log', file]);
    expect([code, stdout]).to.deep.equal([1, '']);
    expect(stderr).to.match(new RegExp(`^svc-server: --audit-log \\(or SVC_AUDIT_LOG\\): cannot open '${file}' for appending: ENOENT`));
  });
});
