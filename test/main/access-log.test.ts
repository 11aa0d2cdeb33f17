/** SVC_ACCESS_LOG=true: the per-request line at info, from Koa's app and the extension gateway alike; unset, at debug. */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startServer, type RunningServer } from '../../src/main/server.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('main: the access log switch (SVC_ACCESS_LOG)', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  let dir: string;
  const running: RunningServer[] = [];

  before(() => {
    dir = tempConfigDir({
      'cm.yaml': configMap('svc-cm', { url: 'http://127.0.0.1:8080' }),
      'secret.yaml': secret('svc-secret', { 'server.secretkey': 'access-log-secret-key-0123456789' }),
    });
  });
  after(async () => {
    for (const server of running) await server.close(1000);
    await rm(dir, { recursive: true, force: true });
  });

  async function requestLines(env: Record<string, string>): Promise<{ lines: Record<string, unknown>[]; all: Record<string, unknown>[] }> {
    const all: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, new Writable({ write(c: Buffer, _e, done) { all.push(JSON.parse(c.toString()) as Record<string, unknown>); done(); } }));
    const server = await startServer({ configDir: dir, host: '127.0.0.1', port: 0, log, env });
    running.push(server);
    await (await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'req-access-1' } })).text();
    await (await fetch(`${server.url}/api/v1/extensions/none/x`, { headers: { 'x-request-id': 'req-access-2' } })).text();
    await new Promise((resolve) => setTimeout(resolve, 50));
    return { lines: all.filter((l) => l['msg'] === 'request'), all };
  }

  it('writes one info line per request, app and gateway, with SVC_ACCESS_LOG=true', async function () {
    const { lines } = await requestLines({ SVC_ACCESS_LOG: 'true' });
    expect(lines.map((l) => [l['level'], l['requestId'], l['method'], l['path'], l['status']])).to.deep.equal([
      [30, 'req-access-1', 'GET', '/healthz', 200],
      [30, 'req-access-2', 'GET', '/api/v1/extensions/none/x', 404],
    ]);
  });

  it('keeps the line at debug when unset, and says so for a value it does not know', async function () {
    expect((await requestLines({})).lines).to.deep.equal([]);
    const { lines, all } = await requestLines({ SVC_ACCESS_LOG: 'yes' });
    expect(lines).to.deep.equal([]);
    expect(all.map((l) => l['msg'])).to.include("SVC_ACCESS_LOG: 'yes' is neither 'true' nor 'false'; the access line stays at debug");
  });
});
