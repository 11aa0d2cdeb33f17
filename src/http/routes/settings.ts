import Router from '@koa/router';
import type { Settings } from '../../config/settings.js';
import { publicSettings } from '../../settings-view.js';
import type { AppState } from '../state.js';

export function settingsRoutes(settings: () => Settings): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/api/v1/settings', function showSettings(ctx) {
    ctx.body = publicSettings(settings());
  });
  return router;
}
