/**
 * `GET /.well-known/svc/jwks.json`: the public keys backends verify Svc-Identity-Assertion with
 * (public halves only, each with its `kid`; retired keys stay until their assertions expire).
 * Without a token: a key set is public by nature, and backends fetch it unauthenticated.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type { AppState } from '../state.js';
import { publicAssertionJwks, type AssertionKey } from '../../extensions/assertion-keys.js';

export const ASSERTION_JWKS_PATH = '/.well-known/svc/jwks.json';
/** Backends may cache it this long: shorter than the wait before a rotated-in key signs. */
const CACHE_SECONDS = 60;

export function assertionJwksRoutes(keys: () => readonly AssertionKey[]): Router<AppState> {
  const router = declaredRouter();
  router.get(ASSERTION_JWKS_PATH, allow('anyone'), function showAssertionKeys(ctx) {
    ctx.set('Cache-Control', `public, max-age=${String(CACHE_SECONDS)}`);
    ctx.type = 'application/jwk-set+json';
    ctx.body = publicAssertionJwks(keys());
  });
  return router;
}
