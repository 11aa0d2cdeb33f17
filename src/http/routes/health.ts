import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { AppState } from '../state.js';

/** Why svc should not get traffic now, or undefined when it should (the configuration loaded, the state backend answering). */
export type ReadinessCheck = () => Promise<string | undefined>;

export function healthRoutes(registry: Registry, notReady?: ReadinessCheck): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/healthz', function healthz(ctx) {
    ctx.body = 'ok';
  });
  router.get('/readyz', async function readyz(ctx) {
    const reason = notReady === undefined ? undefined : await notReady();
    ctx.status = reason === undefined ? 200 : 503;
    ctx.body = reason ?? 'ok';
  });
  router.get('/metrics', async function metrics(ctx) {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
