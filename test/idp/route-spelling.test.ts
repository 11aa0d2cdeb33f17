/**
 * The gate in front of the bundled provider (src/idp/route-spelling.ts): a path passes only when
 * it spells a route of its method exactly; oidc-provider's router would also serve other
 * spellings (case folded, one trailing slash dropped), which svc's checks would not recognise.
 * The route table is checked against the provider itself: its paths by name, and the route its
 * router serves for each spelling the gate lets through.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { pino } from 'pino';
import type Provider from 'oidc-provider';
import { generateSigningKey } from '../../src/idp/keys.js';
import { createProvider } from '../../src/idp/provider.js';
import { onlyRouteSpellings, PROVIDER_ROUTES, routeSpelledBy, type ProviderRoute } from '../../src/idp/route-spelling.js';
import { createAccountStore } from '../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createMemoryState } from '../../src/state/memory.js';
import { fakePasswordConnector, singleConnector } from '../helpers/fake-password-connector.js';
import { freePort } from '../helpers/peers.js';

/** An interaction uid as oidc-provider makes them: mixed case, digits, - and _. */
const UID = 'Xy9-aB_cD3';
const withUid = (route: ProviderRoute): string => route.path.replace(/:[a-z]+/, UID);

/** The other spellings the router folds to a route's: case, one trailing slash. */
function variantsOf(path: string): string[] {
  const upper = path.toUpperCase();
  const lastLiteral = path.split('/').map((s, i, all) => (i === all.length - 1 && s === UID ? s : s.toUpperCase())).join('/');
  const capital = path.replace(/\/([a-z])/, (_m, c: string) => `/${c.toUpperCase()}`);
  return [...new Set([upper, lastLiteral, capital, `${path}/`])].filter((v) => v !== path);
}

describe('idp: one spelling for each of the provider\'s routes', function () {
  describe('routeSpelledBy', function () {
    it('lets every route through under its own spelling, a GET route under HEAD too', function () {
      for (const route of PROVIDER_ROUTES) {
        expect(routeSpelledBy(route.method, withUid(route)), `${route.method} ${route.path}`).to.equal(route);
        if (route.method === 'GET') expect(routeSpelledBy('HEAD', withUid(route)), `HEAD ${route.path}`).to.equal(route);
      }
    });

    it('refuses every other case and a trailing slash, which the router would serve as the route', function () {
      for (const route of PROVIDER_ROUTES) {
        for (const variant of variantsOf(withUid(route))) expect(routeSpelledBy(route.method, variant), `${route.method} ${variant}`).to.equal(undefined);
      }
      for (const [method, path] of [['POST', '/token/Introspection'], ['POST', '/token/INTROSPECTION'], ['POST', '/token/introspection/'], ['GET', '/AUTH'], ['GET', '/auth/'], ['GET', '/Auth'], ['GET', '/auth/x/'], ['POST', '/device/auth/']] as const) {
        expect(routeSpelledBy(method, path), `${method} ${path}`).to.equal(undefined);
      }
    });

    it('keeps mixed-case interaction uids, and refuses an empty one', function () {
      expect(routeSpelledBy('GET', '/auth/AbCdEf123')?.name).to.equal('resume');
      expect(routeSpelledBy('GET', '/device/ZZtop-9')?.name).to.equal('device_resume');
      expect(routeSpelledBy('GET', '/auth/')).to.equal(undefined);
      expect(routeSpelledBy('GET', '/auth//')).to.equal(undefined);
      expect(routeSpelledBy('GET', '/AUTH/AbCdEf123')).to.equal(undefined);
    });

    it('refuses a path the router might take for another route of the same method: POST /device/AUTH is device authorization to it', function () {
      expect(routeSpelledBy('POST', '/device/AUTH')).to.equal(undefined);
      // As a GET it can only be a resume, under its own spelling.
      expect(routeSpelledBy('GET', '/device/AUTH')?.name).to.equal('device_resume');
      expect(routeSpelledBy('GET', '/device/auth')?.name).to.equal('device_resume');
    });

    it('refuses a method the route does not have, an unknown path, an encoded literal and the mount itself', function () {
      expect(routeSpelledBy('GET', '/token')).to.equal(undefined);
      expect(routeSpelledBy('DELETE', '/token')).to.equal(undefined);
      expect(routeSpelledBy('POST', '/%74oken')).to.equal(undefined);
      expect(routeSpelledBy('GET', '/')).to.equal(undefined);
      expect(routeSpelledBy('GET', '/interaction/x')).to.equal(undefined);
      expect(routeSpelledBy('POST', '/reg')).to.equal(undefined);
    });
  });

  describe('onlyRouteSpellings', function () {
    it('answers 404 with the mount in the message and calls nothing after it; passes a route\'s spelling on', async function () {
      const gate = onlyRouteSpellings('/api/idp');
      let called = 0;
      const next = async (): Promise<void> => { called += 1; };
      const refused = { method: 'POST', path: '/token/Introspection', status: 200, body: undefined as unknown };
      await gate(refused, next);
      expect(refused.status).to.equal(404);
      expect(refused.body).to.deep.equal({ error: 'not_found', message: 'no route for POST /api/idp/token/Introspection' });
      const root = { method: 'GET', path: '/', status: 200, body: undefined as unknown };
      await gate(root, next);
      expect(root.body).to.deep.equal({ error: 'not_found', message: 'no route for GET /api/idp' });
      expect(called).to.equal(0);
      const passed = { method: 'POST', path: '/token/introspection', status: 404, body: undefined as unknown };
      await gate(passed, next);
      expect(called).to.equal(1);
      expect(passed.body).to.equal(undefined);
    });
  });

  describe('against the provider svc builds', function () {
    let provider: Provider;
    let server: Server;
    let base: string;
    /** The route oidc-provider's router matched for each request, by `<method> <path>`. */
    const matched = new Map<string, string | undefined>();

    before(async function () {
      const log = pino({ level: 'silent' });
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      const state = createMemoryState({ log });
      provider = createProvider({
        url: base, serverSecretKey: 'route-spelling-test-secret-key-0123', state, log,
        keys: { signing: [await generateSigningKey(new Date())], cookie: ['cookie-key-for-route-spelling-tests'] },
        accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')),
        connectors: singleConnector('dir', fakePasswordConnector({})),
      });
      provider.silent = true;   // some routes fail without a browser's cookies; their 500s are not what is checked
      provider.use(async function recordRoute(ctx, next) {
        try {
          await next();
        } finally {
          matched.set(`${ctx.method} ${ctx.path}`, (ctx as typeof ctx & { _matchedRouteName?: string })._matchedRouteName);
        }
      });
      server = createServer(provider.callback());
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    });

    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** A preflight has an Origin, without which the provider's CORS answers nothing (a 404). */
    const send = (method: string, path: string) => fetch(`${base}${path}`, {
      method, redirect: 'manual',
      ...(method === 'POST' ? { body: new URLSearchParams() } : {}),
      ...(method === 'OPTIONS' ? { headers: { origin: 'https://app.example.org', 'access-control-request-method': 'POST' } } : {}),
    });

    it('names each route as the provider does (pathFor)', function () {
      for (const route of PROVIDER_ROUTES) {
        const params = route.path.includes('/:') ? { uid: UID } : {};
        // A name on two paths (discovery) is the first's.
        const expected = withUid(PROVIDER_ROUTES.find((r) => r.name === route.name) ?? route);
        expect(provider.pathFor(route.name, { mountPath: '', ...params }), route.name).to.equal(expected);
      }
    });

    it('serves each spelling the gate lets through as that route (GET /device is svc\'s own page, before the router)', async function () {
      for (const route of PROVIDER_ROUTES) {
        const path = withUid(route);
        const res = await send(route.method, path);
        await res.arrayBuffer();
        const key = `${route.method} ${path}`;
        expect(res.status, key).not.to.equal(404);
        if (route.method === 'GET' && route.path === '/device') expect(matched.has(key), key).to.equal(false);
        else expect(matched.get(key), key).to.equal(route.name);
      }
    });

    it('answers every other spelling 404 before the router', async function () {
      for (const route of PROVIDER_ROUTES) {
        for (const variant of variantsOf(withUid(route))) {
          const res = await send(route.method, variant);
          const key = `${route.method} ${variant}`;
          expect(res.status, key).to.equal(404);
          expect(await res.json(), key).to.deep.equal({ error: 'not_found', message: `no route for ${route.method} /api/idp${variant}` });
          expect(matched.has(key), key).to.equal(false);
        }
      }
    });
  });
});
