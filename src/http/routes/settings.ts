import Router from '@koa/router';
import { publicSettings, type PublicSettingsSource } from './public-settings.js';
import type { AppState } from '../state.js';

export function settingsRoutes(settings: () => PublicSettingsSource): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/api/v1/settings', function showSettings(ctx) {
    ctx.body = publicSettings(settings());
  });
  return router;
}
