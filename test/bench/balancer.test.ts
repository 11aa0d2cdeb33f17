/**
 * The soak's balancer stands where a production load balancer would: a client reset by it would
 * be counted against svc. So it keeps hop-by-hop headers on their own connection, and says how
 * each client connection ended.
 */
import { expect } from 'chai';
import { createServer, type RequestListener, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBalancer, type Balancer } from '../../bench/soak/balancer.js';
import { freePort } from '../helpers/peers.js';

describe('soak balancer', function () {
  this.timeout(20_000);
  let upstream: Server;
  let balancer: Balancer;
  let answer: RequestListener = (_req, res) => res.end('ok');

  before(async () => {
    upstream = createServer((req, res) => answer(req, res));
    // As svc's server does: longer than a balancer's, so the balancer closes idle connections first.
    upstream.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as { port: number };
    balancer = await startBalancer(await freePort(), () => [`http://127.0.0.1:${port}`]);
  });
  after(async () => {
    await balancer.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });
  afterEach(() => {
    answer = (_req, res) => res.end('ok');
  });

  it('tells its clients its own keep-alive timeout, not the one of the process behind it, and drops what Connection names', async () => {
    answer = (_req, res) => res.setHeader('connection', 'keep-alive, x-this-hop').setHeader('x-this-hop', '1').setHeader('x-end-to-end', '1').end('ok');
    const res = await fetch(balancer.url);
    await res.text();
    expect(res.headers.get('keep-alive')).to.equal('timeout=5');
    expect(res.headers.get('x-this-hop')).to.equal(null);
    expect(res.headers.get('x-end-to-end')).to.equal('1');
  });

  it('leaves an idle connection to its client to close, so that no request is sent on one the balancer is closing', async () => {
    const before = { ...balancer.clientConnections };
    await (await fetch(`${balancer.url}/idle`)).text();
    // The client keeps an idle connection 2 s less than it is told (3 s); the balancer, 6 s.
    await sleep(7_000);
    expect(balancer.clientConnections.byClient - before.byClient).to.equal(1);
    expect(balancer.clientConnections.idleClosed - before.idleClosed).to.equal(0);
  });

  it('counts a connection it cut because the process behind failed, with why', async () => {
    answer = (req) => req.socket.destroy();
    const failed = await fetch(`${balancer.url}/cut`).then(() => undefined, (err: unknown) => err);
    expect(failed).to.be.instanceOf(Error);
    expect(balancer.clientConnections.cut).to.equal(1);
    expect(balancer.clientConnections.cuts[0]?.reason).to.match(/failed before answering: socket hang up$/);
  });
});
