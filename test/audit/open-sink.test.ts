/** The configured sink: the audit file (0600, appended, reopened after a rotation), or a descriptor. */
import { expect } from 'chai';
import { chmodSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditLogUnwritable, openAuditSink } from '../../src/audit/open-sink.js';
import type { AuditEvent } from '../../src/audit/trail.js';
import { validAuditLines } from '../helpers/audit-schema.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const EVENT: AuditEvent = { category: 'iam', type: 'change', action: 'password-changed', outcome: 'success', user: { name: 'alice' } };
const quiet = { warn: () => undefined, error: () => undefined, info: () => undefined };

describe('audit sink (file)', () => {
  let dir = '';
  tempDirEach('svc-audit-', (d) => (dir = d));

  it('creates the file 0600 and appends to what is there', async () => {
    const file = join(dir, 'audit.log');
    writeFileSync(file, 'kept\n', { mode: 0o644 });
    chmodSync(file, 0o644);
    const { sink } = await openAuditSink({ file, fd: 1, log: quiet });
    sink.record(EVENT);
    await sink.close();
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    const [first, ...rest] = readFileSync(file, 'utf8').split('\n');
    expect(first).to.equal('kept');
    expect(validAuditLines(rest.join('\n'))).to.have.length(1);
  });

  it('refuses to start with a file it cannot open, naming the option and the path', async () => {
    const file = join(dir, 'missing', 'audit.log');
    try {
      await openAuditSink({ file, fd: 1, log: quiet });
      expect.fail('opened');
    } catch (err: unknown) {
      expect(err).to.be.instanceOf(AuditLogUnwritable);
      expect((err as Error).message).to.match(new RegExp(`^--audit-log \\(or SVC_AUDIT_LOG\\): cannot open '${file}' for appending: ENOENT`));
    }
  });

  it('after `mv` and SIGHUP writes to a new file at the path, losing nothing', async () => {
    const file = join(dir, 'audit.log');
    const opened = await openAuditSink({ file, fd: 1, log: quiet });
    let hup: () => void = () => undefined;
    const hupped = new Promise<void>((resolve) => (hup = resolve));
    const onHup = () => {
      opened.reopen();
      hup();
    };
    process.on('SIGHUP', onHup);
    try {
      for (let i = 0; i < 300; i++) opened.sink.record({ ...EVENT, svc: { n: i } });
      // Moved while the first lines may still be on their way: they land in the moved file, not nowhere.
      renameSync(file, `${file}.1`);
      process.kill(process.pid, 'SIGHUP');
      await hupped;
      for (let i = 300; i < 600; i++) opened.sink.record({ ...EVENT, svc: { n: i } });
      await opened.sink.close();
    } finally {
      process.off('SIGHUP', onHup);
    }
    const old = validAuditLines(readFileSync(`${file}.1`, 'utf8'));
    const fresh = validAuditLines(readFileSync(file, 'utf8'));
    expect(fresh.length).to.be.greaterThan(0);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(opened.sink.dropped()).to.equal(0);
    const numbers = [...old, ...fresh].map((l) => (l['svc'] as { n: number }).n);
    expect(numbers).to.deep.equal([...Array(600).keys()]);
  });
});
