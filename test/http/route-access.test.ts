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

  it('runs the declaration as the route\'s first middleware: refused callers never reach the handler', async () => {
    let reached = 0;
    const next = async () => {
      reached++;
    };
    const gate = allow('caller') as unknown as (ctx: unknown, next: () => Promise<void>) => Promise<void>;
    let refusal: unknown;
    await gate({ state: state(confined) }, next).catch((err: unknown) => (refusal = err));
    expect(refusal).to.be.instanceOf(SecondFactorEnrolmentRequired);
    await gate({ state: state() }, next).catch((err: unknown) => (refusal = err));
    expect(refusal).to.be.instanceOf(Unauthenticated);
    expect(reached).to.equal(0);
    await gate({ state: state(full) }, next);
    expect(reached).to.equal(1);
  });

  it('gives a route without a gate one that refuses everyone, first in its chain', async () => {
    const router = declaredRouter('/x');
    router.get('/open', allow('anyone'), () => undefined);
    let reached = false;
    router.get('/forgotten', () => {
      reached = true;
    });
    router.use(async (_ctx, next) => next()); // middleware, not a route: nothing to seal
    const sealed = sealRoutes([router]);
    expect(sealed).to.deep.equal([{ path: '/x/forgotten', methods: ['HEAD', 'GET'], access: undefined }]);
    const layer = router.stack.find((l) => l.path === '/x/forgotten');
    const first = layer?.stack[0] as (ctx: unknown, next: () => Promise<void>) => unknown;
    expect(() => first({ state: state(full) }, async () => undefined)).to.throw(PermissionDenied, 'this route declares no access, so it refuses everyone');
    expect(reached).to.equal(false);
    // Sealing twice does not stack refusals, and a declared route keeps its gate.
    expect(sealRoutes([router])).to.deep.equal([]);
    expect(accessOf(router.stack.find((l) => l.path === '/x/open')?.stack[0])).to.deep.equal({ who: 'anyone' });
  });

  it('will not assemble a router that matches paths case-insensitively', () => {
    expect(() => sealRoutes([new Router<AppState>({ prefix: '/api' })])).to.throw("a router of the app matches paths case-insensitively (prefix '/api'): build it with declaredRouter()");
    expect(() => sealRoutes([new Router<AppState>()])).to.throw("(prefix '')");
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

  it('builds a router without a prefix when none is given', () => {
    const router = declaredRouter();
    router.get('/healthz', allow('anyone'), () => undefined);
    expect(router.match('/healthz', 'GET').pathAndMethod).to.have.length(1);
    expect(router.match('/HEALTHZ', 'GET').pathAndMethod).to.have.length(0);
  });

  it('knows no declaration for a value that is not a gate', () => {
    expect(accessOf(undefined)).to.equal(undefined);
    expect(accessOf('routeGate')).to.equal(undefined);
    expect(accessOf(() => undefined)).to.equal(undefined);
  });

  it('matches the path as declared only: another case is no route', () => {
    const router = declaredRouter('/api/v1/account');
    router.get('/:name', allow('caller'), () => undefined);
    expect(router.match('/API/v1/account/bob', 'GET').pathAndMethod).to.have.length(0);
    expect(router.match('/api/v1/account/bob', 'GET').pathAndMethod).to.have.length(1);
  });
});
