/**
 * The gateway sends the request it decided on: while the rights decide, the test changes the
 * client's request (its method, target and headers). The backend must get what was decided: the
 * GET the `get` line allowed, its path and its headers. A gateway that read req.method or
 * req.rawHeaders again after the decision sends the DELETE, and this test fails.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { expect } from 'chai';
import { request } from 'undici';
import { createGateway } from '../../src/extensions/gateway.js';
import { createExtensionMetrics } from '../../src/extensions/metrics.js';
import { createBackendPools, type BackendPools } from '../../src/extensions/pools.js';
import { splitExtensionPath } from '../../src/extensions/target.js';
import { requestTarget } from '../../src/http/request-target.js';
import { decisionSettings, freshRegistry, getLineOnly, READER, silentLog } from './decision-fixture.js';
import { closeServer, echoBackend, listen, type Backend, type Echo } from './helpers.js';

describe('extensions/gateway: the request decided on is the request sent', function () {
  this.timeout(10_000);
  let backend: Backend;
  let pools: BackendPools;
  let front: Server;
  let frontUrl: string;
  let current: IncomingMessage | undefined;
  let rights: ReturnType<typeof getLineOnly>;

  before(async () => {
    backend = await echoBackend('backend');
    pools = createBackendPools(silentLog);
    rights = getLineOnly(
      () => current as IncomingMessage,
      (req) => {
        // The client's request changed between the decision and the forwarding.
        req.method = 'DELETE';
        req.url = '/api/v1/extensions/ext3/admin/wipe';
        req.rawHeaders.push('X-Changed-After', 'yes', 'Svc-Username', 'admin');
        req.headers['x-changed-after'] = 'yes';
      },
    );
    const gateway = createGateway({
      settings: { current: () => decisionSettings(backend.url) },
      rights,
      readCaller: () => ({ principal: READER, token: 'reader-token', via: 'bearer', authError: undefined }),
      rateLimiter: { take: () => undefined, localBuckets: () => 0, leases: () => 0 },
      sourceOf: () => '127.0.0.1',
      pools,
      metrics: createExtensionMetrics(freshRegistry()),
      httpMetrics: { record: () => undefined },
      log: silentLog,
    });
    front = createServer((req, res) => {
      current = req;
      const target = requestTarget(req);
      const extension = target === undefined ? undefined : splitExtensionPath(target.path);
      if (target === undefined || extension === undefined) return void res.writeHead(404).end();
      gateway(req, res, { name: extension.name, rest: extension.rest, query: target.query, path: target.path });
    });
    frontUrl = (await listen(front)).url;
  });

  after(async () => {
    await closeServer(front);
    await pools.close();
    await backend.close();
  });

  it('forwards the GET the rights allowed, to its path, with its headers, though the client request now says DELETE', async () => {
    rights.asked.length = 0;
    const res = await request(`${frontUrl}/api/v1/extensions/ext3/items/42?x=1`, { headers: { 'x-kept': 'a' } });
    const echo = (await res.body.json()) as Echo;
    expect(res.statusCode).to.equal(200);
    expect(rights.asked).to.deep.equal(['get */ext3']);
    expect(echo.method).to.equal('GET');
    expect(echo.url).to.equal('/items/42?x=1');
    expect(echo.headers['x-kept']).to.equal('a');
    expect(echo.headers['svc-username']).to.equal('reader');
    expect(echo.headers).to.not.have.any.keys('x-changed-after');
  });

  it('refuses a DELETE by the same caller before anything is sent', async () => {
    rights.asked.length = 0;
    const res = await request(`${frontUrl}/api/v1/extensions/ext3/items/42`, { method: 'DELETE' });
    expect(res.statusCode).to.equal(403);
    expect(((await res.body.json()) as { error: string }).error).to.equal('permission_denied');
    expect(rights.asked).to.deep.equal(['delete */ext3']);
  });
});
