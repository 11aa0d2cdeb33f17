import Router from '@koa/router';
import type { AppState } from '../state.js';

/** `GET /api/version` (as Argo CD's): the server's version only, never the runtime's, without a token. */
export function versionRoutes(version: string): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/api/version', function showVersion(ctx) {
    ctx.body = { version };
  });
  return router;
}
