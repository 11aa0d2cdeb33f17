/**
 * The audit sink stalled: its file is a FIFO that a reader holds open and never reads, so the
 * pipe fills and the writer blocks. A flood of refused proxied requests (each one an event) is
 * answered as fast as with no sink at all, the events beyond the queue are dropped, counted in
 * /metrics and warned about.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { createAuditSink, type AuditSink } from '../../src/audit/queue.js';
import { NO_AUDIT } from '../../src/audit/trail.js';
import { fileWriter } from '../../src/audit/writers.js';
import { accountsConfigDir, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { closeServer, startBackend, type Backend } from '../extensions/helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const REQUESTS = 400;
const CONCURRENCY = 8;

describe('audit trail: a stalled sink never slows a request', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let echo: Backend;
  let dir: string;

  before(async () => {
    echo = await startBackend((_req, res) => res.end('ok'));
    dir = accountsConfigDir({ cm: { 'extension.config': YAML.stringify({ extensions: [{ name: 'echo', enabled: true, backend: { services: [{ url: echo.url }] } }] }) } });
  });
  after(() => closeServer(echo.server));

  /** Median milliseconds of REQUESTS refused (403) proxied requests, CONCURRENCY at a time. */
  async function floodOfRefusals(server: TestServer): Promise<number> {
    const token = await login(server.url, 'alice', PASSWORDS.alice);
    const times: number[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        next++;
        const start = performance.now();
        const res = await fetch(`${server.url}/api/v1/extensions/echo/x`, { headers: { authorization: `Bearer ${token}` } });
        await res.text();
        expect(res.status).to.equal(403);
        times.push(performance.now() - start);
      }
    }));
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)] ?? 0;
  }

  it('fills the queue, drops and counts, and answers as fast as without a sink', async () => {
    const plain = await startTestServer(dir, { audit: NO_AUDIT });
    let withoutSink: number;
    try {
      withoutSink = await floodOfRefusals(plain);
    } finally {
      await plain.close();
    }

    const fifo = join(mkdtempSync(join(tmpdir(), 'svc-audit-fifo-')), 'audit.fifo');
    execFileSync('mkfifo', [fifo]);
    // Held open and never read: the writer's open succeeds, its writes block once the pipe (64 KiB) is full.
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const warnings: string[] = [];
    const sinkLog = { warn: (_f: object, m: string) => void warnings.push(m), error: () => undefined, info: () => undefined };
    const sink: AuditSink = createAuditSink({ writer: fileWriter(fifo, sinkLog), service: { name: 'svc', version: 'test' }, log: sinkLog, capacity: 50 });
    const stalled = await startTestServer(dir, { audit: sink });
    try {
      const withStalledSink = await floodOfRefusals(stalled);
      // The writer is stuck: what was recorded is not written.
      const flushed = await Promise.race([sink.flush().then(() => true), new Promise((r) => setTimeout(() => r(false), 300))]);
      expect(flushed, 'the sink flushed although nobody reads the FIFO').to.equal(false);
      expect(sink.dropped()).to.be.greaterThan(REQUESTS / 2);
      const metrics = await (await fetch(`${stalled.url}/metrics`)).text();
      expect(metrics).to.match(new RegExp(`^svc_audit_events_dropped_total ${sink.dropped()}$`, 'm'));
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.match(/^audit sink is not keeping up: \d+ audit event\(s\) dropped since the last warning/);
      // Loosely: a stalled sink costs a request nothing it would notice.
      console.log(`      median of ${REQUESTS} refused requests: ${withoutSink.toFixed(2)} ms without a sink, ${withStalledSink.toFixed(2)} ms with a stalled one`);
      expect(withStalledSink).to.be.below(withoutSink * 3 + 20);
    } finally {
      // Empty the pipe and hang up: the blocked write ends (EPIPE, counted as dropped) and the server can close.
      const buffer = Buffer.alloc(65536);
      try {
        while (readSync(reader, buffer) > 0);
      } catch {
        // EAGAIN: empty
      }
      closeSync(reader);
      await stalled.close();
      await sink.close();
    }
  });
});
