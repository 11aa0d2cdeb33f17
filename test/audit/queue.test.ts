/** The audit sink's queue: ECS lines in whole-line writes, a stalled writer drops and counts, a warning at most once a minute. */
import { expect } from 'chai';
import { ATOMIC_WRITE_BYTES, createAuditSink, type AuditWriter } from '../../src/audit/queue.js';
import type { AuditEvent } from '../../src/audit/trail.js';
import { validAuditLines } from '../helpers/audit-schema.js';

const SERVICE = { name: 'svc', version: '1.2.3' };
const EVENT: AuditEvent = { category: 'authentication', type: 'start', action: 'login', outcome: 'success', user: { name: 'alice' }, source: { ip: '127.0.0.1', requestId: 'r-1' }, svc: { method: 'password' } };

function keptWriter(): AuditWriter & { writes: string[] } {
  const writes: string[] = [];
  return {
    writes,
    write(text) {
      writes.push(text);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
}

/** A writer whose writes never finish until released: a reader that stopped reading. */
function stalledWriter(): AuditWriter & { release(): void; writes: string[] } {
  const writes: string[] = [];
  const waiting: (() => void)[] = [];
  return {
    writes,
    write(text) {
      writes.push(text);
      return new Promise((resolve) => waiting.push(resolve));
    },
    release: () => waiting.splice(0).forEach((r) => r()),
    close: () => Promise.resolve(),
  };
}

function warnings() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  return { lines, log: { warn: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }), error: () => undefined } };
}

describe('audit sink queue', () => {
  it('writes each event as one ECS line with the time it was recorded, the service and svc.audit.version', async () => {
    const writer = keptWriter();
    const sink = createAuditSink({ writer, service: SERVICE, log: warnings().log, now: () => Date.parse('2026-01-02T03:04:05.678Z') });
    sink.record(EVENT);
    await sink.flush();
    const [line] = validAuditLines(writer.writes.join(''));
    expect(line).to.deep.equal({
      '@timestamp': '2026-01-02T03:04:05.678Z', 'log.logger': 'audit', ecs: { version: '8.11.0' },
      event: { kind: 'event', category: ['authentication'], type: ['start'], action: 'login', outcome: 'success' },
      service: { name: 'svc', version: '1.2.3' }, user: { name: 'alice' }, source: { ip: '127.0.0.1' }, http: { request: { id: 'r-1' } },
      svc: { method: 'password', audit: { version: '1' } },
    });
  });

  it('cuts writes at line ends, each at most PIPE_BUF bytes, so concurrent writers never interleave inside a line', async () => {
    const writer = keptWriter();
    const sink = createAuditSink({ writer, service: SERVICE, log: warnings().log });
    for (let i = 0; i < 200; i++) sink.record({ ...EVENT, svc: { n: i } });
    await sink.flush();
    expect(writer.writes.length).to.be.greaterThan(1);
    for (const w of writer.writes) {
      expect(Buffer.byteLength(w)).to.be.at.most(ATOMIC_WRITE_BYTES);
      expect(w.endsWith('\n')).to.equal(true);
    }
    expect(validAuditLines(writer.writes.join('')).map((l) => (l['svc'] as { n: number }).n)).to.deep.equal([...Array(200).keys()]);
  });

  it('never waits for a stalled writer: past the capacity events are dropped, counted, and warned about once a minute', async () => {
    const writer = stalledWriter();
    let now = 1_000_000;
    const { lines, log } = warnings();
    const sink = createAuditSink({ writer, service: SERVICE, log, capacity: 10, now: () => now });
    for (let i = 0; i < 15; i++) sink.record(EVENT);
    expect(sink.dropped()).to.equal(5);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writer.writes).to.have.length(1); // the first 10, stuck in the writer
    for (let i = 0; i < 12; i++) sink.record(EVENT);
    expect(sink.dropped()).to.equal(7);
    expect(lines).to.have.length(1);
    expect(lines[0]?.fields).to.include({ dropped: 1, capacity: 10 });
    now += 60_000;
    sink.record(EVENT);
    expect(lines).to.have.length(2);
    expect(lines[1]?.fields).to.include({ dropped: 7, droppedTotal: 8 });
    writer.release();
    await new Promise((resolve) => setImmediate(resolve));
    writer.release();
    await sink.flush();
    expect(validAuditLines(writer.writes.join(''))).to.have.length(20);
  });

  it('counts the lines of a failed write as dropped', async () => {
    const { log } = warnings();
    const errors: unknown[] = [];
    const sink = createAuditSink({ writer: { write: () => Promise.reject(new Error('EIO')), close: () => Promise.resolve() }, service: SERVICE, log: { ...log, error: (f: unknown) => void errors.push(f) } });
    sink.record(EVENT);
    sink.record(EVENT);
    await sink.flush();
    expect(sink.dropped()).to.equal(2);
    expect(errors).to.have.length(1);
  });
});
