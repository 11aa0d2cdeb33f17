/** The extension proxy as a feature: answered before Koa, WebSockets included. */
import { createExtensionProxy } from '../extensions/proxy.js';
import type { Feature } from './feature.js';
import type { Authentication } from './authentication.js';
import type { Services } from './services.js';

export function buildExtensions(services: Services, authentication: Authentication): Feature {
  const proxy = createExtensionProxy({
    settings: services.settings,
    rights: services.rights,
    log: services.log,
    accessLogLevel: services.accessLogLevel,
    httpMetrics: services.metrics,
    readCaller: authentication.readCaller,
    authenticator: authentication.authenticator,
  });
  return {
    name: 'extensions',
    handle: (req, res, target) => proxy.handle(req, res, target),
    webSocket: (req, socket, head, target, track) => proxy.upgrade(req, socket, head, target, track),
    close: () => proxy.close(),
  };
}
