/** The extension proxy as a feature: answered before Koa, WebSockets included; with it, the identity assertion keys. */
import { assertionKeysIn, ensureAssertionKeys } from '../extensions/assertion-keys.js';
import { createIdentityAssertions } from '../extensions/identity-assertion.js';
import { assertionJwksRoutes } from '../http/routes/assertion-jwks.js';
import { createExtensionProxy } from '../extensions/proxy.js';
import { createRateLimiter } from '../extensions/rate-limit.js';
import { clientAddressOf, sourceOf } from '../http/client-address.js';
import type { Feature } from './feature.js';
import type { Authentication } from './authentication.js';
import type { Services } from './services.js';

export async function buildExtensions(services: Services, authentication: Authentication): Promise<Feature> {
  try {
    await ensureAssertionKeys(services.store, () => new Date(services.now()));
  } catch (err: unknown) {
    // Not fatal to the server: extensions without identityAssertion work; those with it answer 503 until the keys can be read.
    services.log.error({ err }, 'extensions: the identity assertion keys in svc-secret could not be made or read; extensions with backend.identityAssertion answer 503 until they can');
  }
  const keys = assertionKeysIn(services.store);
  const trusted = services.trustedProxies;
  const proxy = createExtensionProxy({
    settings: services.settings,
    rights: services.rights,
    audit: services,
    log: services.log,
    accessLogLevel: services.accessLogLevel,
    httpMetrics: services.metrics,
    readCaller: authentication.readCaller,
    authenticator: authentication.authenticator,
    assertions: createIdentityAssertions({ keys, issuer: () => services.settings.current().url, now: services.now }),
    rateLimiter: createRateLimiter({ state: services.state, now: services.now, log: services.log, registry: services.metrics.registry }),
    sourceOf: (peer, forwardedFor) => sourceOf(clientAddressOf(peer, forwardedFor, trusted)),
  });
  return {
    name: 'extensions',
    routers: [assertionJwksRoutes(keys)],
    handle: (req, res, target) => proxy.handle(req, res, target),
    webSocket: (req, socket, head, target, track) => proxy.upgrade(req, socket, head, target, track),
    close: () => proxy.close(),
  };
}
