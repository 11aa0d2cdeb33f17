/** svc's login and account pages (src/web/): static files read at start, served by the app. */
import { loadWebAssets } from '../web/assets.js';
import { webRoutes } from '../web/routes.js';
import type { Feature } from './feature.js';
import type { Services } from './services.js';

export function buildWeb(services: Services): Feature {
  const assets = loadWebAssets();
  if (assets.missing.length > 0) services.log.warn({ missing: assets.missing }, 'the login and account pages are not built (run npm run build): they answer with a page saying so');
  return { name: 'web', routers: [webRoutes(assets)] };
}
