/** The extension proxy as a feature: answered before Koa, WebSockets included. */
import { createExtensionProxy } from '../extensions/proxy.js';
import type { Feature } from './feature.js';
import type { Identity } from './identity.js';
import type { Services } from './services.js';

export function buildExtensions(services: Services, identity: Identity): Feature {
  const proxy = createExtensionProxy({
    settings: services.settings,
    rights: services.rights,
    log: services.log,
    accessLogLevel: services.accessLogLevel,
    httpMetrics: services.metrics,
    readCaller: identity.readCaller,
    authenticator: identity.authenticator,
  });
  return {
    name: 'extensions',
    handle: (req, res, target) => proxy.handle(req, res, target),
    webSocket: (req, socket, head, target, track) => proxy.upgrade(req, socket, head, target, track),
    close: () => proxy.close(),
  };
}
