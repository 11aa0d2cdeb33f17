/**
 * POST /api/v1/session/exchange (src/http/routes/exchange.ts): the address an exchange's
 * failures before the signature count under is the request's source as the pending bound reads
 * it: the peer, or what a trusted front proxy reports. Behind an ingress without that, every
 * workload would share the ingress's address, and one caller's forged tokens would hold them all.
 */
import { expect } from 'chai';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { pino } from 'pino';
import { parseTrustedProxies } from '../../../src/http/client-address.js';
import { exchangeRoutes } from '../../../src/http/routes/exchange.js';
import type { AppState } from '../../../src/http/state.js';
import { requestSource } from '../../../src/idp/pending-source.js';
import type { ExchangeRequest } from '../../../src/workload/exchange.js';

async function serveWith(trusted: string | undefined): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const proxies = parseTrustedProxies(trusted);
  const app = new Koa<AppState>();
  app.use(async (ctx, next) => {
    ctx.state.requestId = 'test';
    await next();
  });
  const router = exchangeRoutes({
    exchange: (request: ExchangeRequest) => {
      seen.push(request.clientIp);
      return Promise.resolve({ accessToken: 't', issuedTokenType: 'urn:ietf:params:oauth:token-type:access_token', expiresIn: 60, username: 'w', tokenId: 'j', expiresAt: 2_000_000_000 });
    },
    log: pino({ level: 'silent' }),
    sourceOf: (req: IncomingMessage) => requestSource(req, proxies),
    recordLogin: () => Promise.resolve(),
  });
  app.use(router.routes());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const post = (url: string, forwardedFor: string): Promise<Response> =>
  fetch(`${url}/api/v1/session/exchange`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': forwardedFor },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: 'x' }).toString(),
  });

describe('HTTP POST /api/v1/session/exchange: the source its failures count under', function () {
  it('is the address a trusted front proxy reports', async function () {
    const served = await serveWith('127.0.0.1');
    try {
      expect((await post(served.url, '203.0.113.9')).status).to.equal(200);
      expect(served.seen).to.deep.equal(['203.0.113.9']);
    } finally {
      await served.close();
    }
  });

  it('is the peer when no proxy is trusted, whatever X-Forwarded-For says', async function () {
    const served = await serveWith(undefined);
    try {
      expect((await post(served.url, '203.0.113.9')).status).to.equal(200);
      expect(served.seen).to.deep.equal(['127.0.0.1']);
    } finally {
      await served.close();
    }
  });
});
