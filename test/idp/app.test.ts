/**
 * Which of the two apps under /api/idp answers a path (src/idp/app.ts): the login app's routes
 * all count as its paths, and the provider's paths around them do not. The provider's own
 * endpoints are checked against its discovery document in test/e2e/idp-provider.test.ts.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { interactionRoutes, isLoginAppPath } from '../../src/idp/login/interactions.js';
import { routeTable, sealRoutes } from '../../src/http/route-access.js';
import type { LoginFlow } from '../../src/idp/login/login-flow.js';
import type { PasswordGuard } from '../../src/idp/login/password-guard.js';

/** The login app's router; building it calls none of its dependencies. */
function loginRouter(): ReturnType<typeof interactionRoutes> {
  return interactionRoutes({
    provider: () => { throw new Error('not called'); },
    flow: {} as LoginFlow,
    guard: {} as PasswordGuard,
    connectors: { list: () => [], get: () => undefined },
    log: pino({ level: 'silent' }),
    sourceOf: () => '127.0.0.1',
  });
}

describe('idp: the login app\'s paths', function () {
  it('every route of the login app is one of its paths', function () {
    const router = loginRouter();
    const paths = router.stack.map((layer) => String(layer.path).replace(/:[a-z]+/gi, 'x1'));
    expect(paths).to.include.members(['/api/idp/interaction/x1', '/api/idp/callback', '/api/idp/saml/x1/metadata']);
    for (const path of paths) expect(isLoginAppPath(path), path).to.equal(true);
  });

  it('every route of the login app declares who may call it, and matches one spelling only', function () {
    const router = loginRouter();
    const routes = routeTable([router]);
    expect(routes.length).to.be.above(8);
    expect(routes.filter((route) => route.access === undefined).map((route) => route.path)).to.deep.equal([]);
    // Every caller of a login in progress is anonymous: what binds it is the browser's interaction cookie.
    expect(new Set(routes.map((route) => route.access?.who))).to.deep.equal(new Set(['anyone']));
    expect(() => sealRoutes([router])).not.to.throw();
    expect(router.match('/api/idp/INTERACTION/x1', 'GET').pathAndMethod).to.have.length(0);
  });

  it('the provider\'s paths are not, nor are lookalikes outside the mount', function () {
    for (const path of [
      '/api/idp', '/api/idp/', '/api/idp/auth', '/api/idp/auth/uid-1', '/api/idp/token', '/api/idp/jwks', '/api/idp/me',
      '/api/idp/.well-known/openid-configuration', '/api/idp/device', '/api/idp/device/auth', '/api/idp/session/end',
      '/api/idp/token/revocation', '/api/idp/interaction', '/api/idp/callbacks', '/api/idpx/callback', '/interaction/x',
    ]) expect(isLoginAppPath(path), path).to.equal(false);
  });
});
