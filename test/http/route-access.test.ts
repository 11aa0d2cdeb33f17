import { expect } from 'chai';
import Router from '@koa/router';
import { PermissionDenied, SecondFactorEnrolmentRequired, Unauthenticated } from '../../src/errors.js';
import type { Principal } from '../../src/principal.js';
import { accessOf, allow, decide, declaredRouter, routeTable, sealRoutes, type Who } from '../../src/http/route-access.js';
import type { AppState } from '../../src/http/state.js';

const full = { username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 't1', expiresAt: undefined } as unknown as Principal;
const confined: Principal = { ...full, enrolmentOnly: true };

function state(principal?: Principal, authError?: Error): AppState {
  return { principal, authError } as unknown as AppState;
}

function outcome(who: Who, s: AppState): string {
  try {
    decide({ who }, s);
    return 'pass';
  } catch (err: unknown) {
    if (err instanceof SecondFactorEnrolmentRequired) return 'enrolment-required';
    if (err instanceof Unauthenticated) return 'unauthenticated';
    throw err;
  }
}

describe('route access declarations', () => {
  it('decides each kind of caller as its declaration says', () => {
    const table = (['anyone', 'enrolment', 'caller'] as const).map((who) => [who, outcome(who, state()), outcome(who, state(confined)), outcome(who, state(full))]);
    expect(table).to.deep.equal([
      ['anyone', 'pass', 'pass', 'pass'],
      ['enrolment', 'unauthenticated', 'pass', 'pass'],
      ['caller', 'unauthenticated', 'enrolment-required', 'pass'],
    ]);
  });

  it('refuses with the reason a sent token was refused, not a generic one', () => {
    const expired = new Unauthenticated('token expired');
    expect(() => decide({ who: 'caller' }, state(undefined, expired))).to.throw(expired.message);
  });

  it('gives a route without a gate one that refuses everyone, first in its chain', async () => {
    const router = declaredRouter('/x');
    router.get('/open', allow('anyone'), () => undefined);
    let reached = false;
    router.get('/forgotten', () => {
      reached = true;
    });
    const sealed = sealRoutes([router]);
    expect(sealed.map((r) => r.path)).to.deep.equal(['/x/forgotten']);
    const layer = router.stack.find((l) => l.path === '/x/forgotten');
    const first = layer?.stack[0] as (ctx: unknown, next: () => Promise<void>) => unknown;
    expect(() => first({ state: state(full) }, async () => undefined)).to.throw(PermissionDenied);
    expect(reached).to.equal(false);
    // Sealing twice does not stack refusals, and a declared route keeps its gate.
    expect(sealRoutes([router])).to.deep.equal([]);
    expect(accessOf(router.stack.find((l) => l.path === '/x/open')?.stack[0])).to.deep.equal({ who: 'anyone' });
  });

  it('will not assemble a router that matches paths case-insensitively', () => {
    expect(() => sealRoutes([new Router<AppState>({ prefix: '/api' })])).to.throw(/case-insensitively/);
  });

  it('lists each route with its methods, prefix included, and what it needs', () => {
    const router = declaredRouter('/api/v1/thing');
    router.get('/:id', allow('caller', 'things, get <id>'), () => undefined);
    router.delete('/:id', () => undefined);
    router.use(async (_ctx, next) => next()); // middleware, not a route
    expect(routeTable([router])).to.deep.equal([
      { path: '/api/v1/thing/:id', methods: ['HEAD', 'GET'], access: { who: 'caller', needs: 'things, get <id>' } },
      { path: '/api/v1/thing/:id', methods: ['DELETE'], access: undefined },
    ]);
  });

  it('matches the path as declared only: another case is no route', () => {
    const router = declaredRouter('/api/v1/account');
    router.get('/:name', allow('caller'), () => undefined);
    expect(router.match('/API/v1/account/bob', 'GET').pathAndMethod).to.have.length(0);
    expect(router.match('/api/v1/account/bob', 'GET').pathAndMethod).to.have.length(1);
  });
});
