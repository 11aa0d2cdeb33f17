/**
 * forward() on its own, with a real undici Pool of one connection and real HTTP servers on both
 * sides: what happens when every connection to a backend is busy.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { expect } from 'chai';
import pino from 'pino';
import { Pool, request } from 'undici';
import { BackendTimeout } from '../../src/errors.js';
import { forward, type ForwardRequest } from '../../src/extensions/forward.js';
import { authorize, readProxiedRequest } from '../../src/extensions/authorized-request.js';
import { decisionSettings, READER } from './decision-fixture.js';
import { closeServer, listen, startBackend, type Backend } from './helpers.js';

describe('forward: a backend whose only connection is busy', function () {
  this.timeout(10_000);
  let backend: Backend;
  let pool: Pool;
  let received: string[];
  let release: (() => void) | undefined;

  beforeEach(async () => {
    received = [];
    backend = await startBackend((req, res) => {
      received.push(req.url ?? '');
      if (req.url === '/hold') {
        release = () => res.end('held');
        return;
      }
      res.end('quick');
    });
    pool = new Pool(backend.url, { connections: 1 });
  });

  afterEach(async () => {
    release?.();
    await pool.destroy();
    await backend.close();
  });

  /** A front server whose every request is forwarded to `path` on the pool, waiting at most queueMs for a connection. */
  async function front(queueMs: number, failures: unknown[]) {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const settings = decisionSettings(backend.url);
      const authorized = authorize(readProxiedRequest(req, { name: 'ext3', rest: req.url ?? '/', query: '' }, 'request'), { principal: READER, authError: undefined }, settings, { allows: () => true }, undefined);
      const forwarded: ForwardRequest = {
        dispatcher: pool, authorized, extension: 'busy', origin: backend.url, body: null,
        idleMs: 5_000, queueMs, responseHeaders: [], contentSecurityPolicy: undefined, log: () => pino({ level: 'silent' }),
      };
      forward(forwarded, res, { bytesIn: 0, bytesOut: 0 }, (err) => {
        failures.push(err);
        res.writeHead(504).end('gave up');
      });
    });
    const { url } = await listen(server);
    return { url, close: () => closeServer(server) };
  }

  it('answers 504 when no connection frees up within the wait limit, and never sends that request later', async () => {
    const failures: unknown[] = [];
    const svc = await front(200, failures);
    const held = request(`${svc.url}/hold`);
    await waitFor(() => received.length === 1);
    const started = Date.now();
    const queued = await request(`${svc.url}/queued`);
    expect(queued.statusCode).to.equal(504);
    expect(await queued.body.text()).to.equal('gave up');
    expect(Date.now() - started).to.be.within(150, 2_000);
    expect(failures).to.have.length(1);
    expect(failures[0]).to.be.instanceOf(BackendTimeout);
    expect((failures[0] as Error).message).to.equal("the backend of extension 'busy' had no free connection for 0.2s");
    release?.();
    expect(await (await held).body.text()).to.equal('held');
    // The connection is free again: a new request goes through, the abandoned one never arrives.
    expect(await (await request(`${svc.url}/after`)).body.text()).to.equal('quick');
    expect(received).to.deep.equal(['/hold', '/after']);
    await svc.close();
  });

  it('lets a queued request through when a connection frees up in time', async () => {
    const failures: unknown[] = [];
    const svc = await front(2_000, failures);
    const held = request(`${svc.url}/hold`);
    await waitFor(() => received.length === 1);
    const queued = request(`${svc.url}/queued`);
    setTimeout(() => release?.(), 100);
    expect(await (await queued).body.text()).to.equal('quick');
    expect(await (await held).body.text()).to.equal('held');
    expect(failures).to.deep.equal([]);
    await svc.close();
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error('condition not reached');
}
