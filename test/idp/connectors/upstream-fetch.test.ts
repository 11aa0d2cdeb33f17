/**
 * The upstream TLS policy connectors get (src/idp/connectors/upstream-fetch.ts over src/lib/tls-fetch.ts),
 * against a real HTTPS server whose certificate a throwaway test CA signed.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { upstreamFetches } from '../../../src/idp/connectors/upstream-fetch.js';
import { describeFailure } from '../../../src/lib/tls-fetch.js';
import { makeTestCa, type TestCa } from '../../helpers/test-ca.js';

interface Line { level: number; msg: string; host?: string; reason?: string }

function capture(): { lines: Line[]; log: pino.Logger } {
  const lines: Line[] = [];
  return { lines, log: pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as Line) }) };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => { throw new Error('expected a failure'); }, (err: unknown) => err);
}

describe('upstream fetch (the connectors\' TLS policy)', () => {
  let ca: TestCa;
  let server: Server;
  let url: string;

  before(async () => {
    ca = makeTestCa();
    server = createServer({ cert: ca.certPem, key: ca.keyPem }, (_req, res) => res.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('refuses a certificate from a CA it was not given, logging the host and the reason', async () => {
    const { lines, log } = capture();
    const fetches = upstreamFetches(log, false);
    const err = await failure(fetches.upstreamFetch()(url));
    expect(describeFailure(err)).to.match(/^certificate verification failed: /);
    const line = lines.find((l) => l.level === 50);
    expect(line?.msg).to.equal(`the certificate of ${new URL(url).host} is not trusted: give its CA as rootCA`);
    expect(line?.host).to.equal(new URL(url).host);
    await fetches.close();
  });

  it('trusts the rootCA given, beside the system roots', async () => {
    const { lines, log } = capture();
    const fetches = upstreamFetches(log, false);
    const res = await fetches.upstreamFetch([ca.caPem])(url);
    expect(await res.text()).to.equal('hello');
    expect(lines.filter((l) => l.level >= 40)).to.deep.equal([]);
    await fetches.close();
  });

  it('verifies nothing under the skip switch, and says so when a connector takes it', async () => {
    const { lines, log } = capture();
    const fetches = upstreamFetches(log, true);
    const insecure = fetches.upstreamFetch();
    expect(lines.map((l) => l.msg)).to.deep.equal(["oidc.tls.insecure.skip.verify is true: this connector does NOT verify its upstream's certificate"]);
    expect(await (await insecure(url)).text()).to.equal('hello');
    await fetches.close();
  });

  it('names an unreachable host in a warning, without calling it a certificate problem', async () => {
    const { lines, log } = capture();
    const fetches = upstreamFetches(log, false);
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const err = await failure(fetches.upstreamFetch()(`https://127.0.0.1:${port}/`));
    expect(describeFailure(err)).to.match(/^ECONNREFUSED/);
    expect(lines.map((l) => `${l.level} ${l.msg}`)).to.deep.equal([`40 127.0.0.1:${port} cannot be reached`]);
    await fetches.close();
  });

  it('closes its pools: a fetch after close fails', async () => {
    const { log } = capture();
    const fetches = upstreamFetches(log, false);
    const upstream = fetches.upstreamFetch([ca.caPem]);
    expect((await upstream(url)).status).to.equal(200);
    await fetches.close();
    expect(describeFailure(await failure(upstream(url)))).to.match(/destroyed|closed/i);
  });
});
