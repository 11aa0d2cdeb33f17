/** GET /.well-known/svc/jwks.json (src/http/routes/assertion-jwks.ts): the assertion keys' public halves, or 503 saying why not. */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import Koa from 'koa';
import { pino } from 'pino';
import { AssertionKeysUnavailable, generateAssertionKey, type AssertionKey } from '../../../src/extensions/assertion-keys.js';
import { errorMiddleware } from '../../../src/http/errors.js';
import { assertionJwksRoutes } from '../../../src/http/routes/assertion-jwks.js';
import type { AppState } from '../../../src/http/state.js';
import { closeServer, listen } from '../../extensions/helpers.js';

describe('HTTP GET /.well-known/svc/jwks.json', () => {
  let server: Server;
  let base: string;
  let keys: () => readonly AssertionKey[];

  before(async () => {
    const app = new Koa<AppState>();
    app.use(async (ctx, next) => {
      ctx.state.requestId = 'test';
      await next();
    });
    app.use(errorMiddleware(pino({ level: 'silent' })));
    app.use(assertionJwksRoutes(() => keys()).routes());
    app.silent = true;
    server = createServer(app.callback());
    base = (await listen(server)).url;
  });
  after(() => closeServer(server));

  it('publishes every key, newest first, without its private part', async () => {
    const stored = [await generateAssertionKey(new Date()), await generateAssertionKey(new Date())];
    keys = () => stored;
    const res = await fetch(`${base}/.well-known/svc/jwks.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/jwk-set\+json/);
    expect(res.headers.get('cache-control')).to.equal('public, max-age=60');
    const text = await res.text();
    const body = JSON.parse(text) as { keys: { kid: string }[] };
    expect(body.keys.map((k) => k.kid)).to.deep.equal(stored.map((k) => k.kid));
    for (const key of stored) expect(text).to.not.include(key.jwk.d);
    expect(text).to.not.include('"d"');
  });

  it('answers 503 naming the missing key when svc-secret holds none', async () => {
    keys = () => {
      throw new AssertionKeysUnavailable('svc-secret has no assertion.signingKeys');
    };
    const res = await fetch(`${base}/.well-known/svc/jwks.json`);
    expect(res.status).to.equal(503);
    expect(await res.json()).to.deep.include({ error: 'unavailable', message: 'svc-secret has no assertion.signingKeys' });
  });
});
