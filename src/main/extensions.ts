/** The extension proxy as a feature: answered before Koa, WebSockets included. */
import { createExtensionProxy } from '../extensions/proxy.js';
import { createRateLimiter } from '../extensions/rate-limit.js';
import { clientAddressOf, parseTrustedProxies, sourceOf } from '../http/client-address.js';
import type { Feature } from './feature.js';
import type { Authentication } from './authentication.js';
import type { Services } from './services.js';

export function buildExtensions(services: Services, authentication: Authentication): Feature {
  const trusted = parseTrustedProxies(services.env['SVC_TRUSTED_PROXIES']);
  const proxy = createExtensionProxy({
    settings: services.settings,
    rights: services.rights,
    log: services.log,
    accessLogLevel: services.accessLogLevel,
    httpMetrics: services.metrics,
    readCaller: authentication.readCaller,
    authenticator: authentication.authenticator,
    rateLimiter: createRateLimiter({ state: services.state, now: services.now, log: services.log, registry: services.metrics.registry }),
    sourceOf: (peer, forwardedFor) => sourceOf(clientAddressOf(peer, forwardedFor, trusted)),
  });
  return {
    name: 'extensions',
    handle: (req, res, target) => proxy.handle(req, res, target),
    webSocket: (req, socket, head, target, track) => proxy.upgrade(req, socket, head, target, track),
    close: () => proxy.close(),
  };
}
