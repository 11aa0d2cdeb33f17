import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type { AppState } from '../state.js';

/** `GET /api/version` (as Argo CD's): the server's version only, never the runtime's, without a token. */
export function versionRoutes(version: string): Router<AppState> {
  const router = declaredRouter();
  router.get('/api/version', allow('anyone'), function showVersion(ctx) {
    ctx.body = { version };
  });
  return router;
}
