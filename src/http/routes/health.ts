import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { AppState } from '../state.js';

export function healthRoutes(registry: Registry): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/healthz', function healthz(ctx) {
    ctx.body = 'ok';
  });
  router.get('/metrics', async function metrics(ctx) {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
