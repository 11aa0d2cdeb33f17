import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import { publicSettings, type PublicSettingsSource } from './public-settings.js';
import type { AppState } from '../state.js';

export function settingsRoutes(settings: () => PublicSettingsSource): Router<AppState> {
  const router = declaredRouter();
  router.get('/api/v1/settings', allow('anyone'), function showSettings(ctx) {
    ctx.body = publicSettings(settings());
  });
  return router;
}
