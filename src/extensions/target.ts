/** Where an extension request goes: name and rest from the path, backend path, forwarding context. */
import type { ExtensionRoute } from './access.js';
import type { BackendService } from './config.js';
import type { ForwardContext } from './headers.js';
import { basePathOf, joinBackendPath } from './path.js';

export const EXTENSIONS_PREFIX = '/api/v1/extensions/';

/** `/api/v1/extensions/<name>/<rest>` → name and raw rest (`` or `/...`); undefined outside the prefix. */
export function splitExtensionPath(path: string): { name: string; rest: string } | undefined {
  if (!path.startsWith(EXTENSIONS_PREFIX)) return undefined;
  const slash = path.indexOf('/', EXTENSIONS_PREFIX.length);
  return slash === -1
    ? { name: path.slice(EXTENSIONS_PREFIX.length), rest: '' }
    : { name: path.slice(EXTENSIONS_PREFIX.length, slash), rest: path.slice(slash) };
}

/**
 * A service URL parsed once per configured service (the objects are replaced, not changed, when
 * the configuration changes), not once per proxied request. Callers only read it.
 */
const parsedServices = new WeakMap<BackendService, { readonly url: URL; readonly base: string }>();

function parsedService(service: BackendService): { readonly url: URL; readonly base: string } {
  let parsed = parsedServices.get(service);
  if (parsed === undefined) {
    const url = new URL(service.url);
    parsed = { url, base: basePathOf(url) };
    parsedServices.set(service, parsed);
  }
  return parsed;
}

/** The backend path and query for a route: base path of the service URL + the request's rest. */
export function backendTarget(route: ExtensionRoute, rest: string, query: string): { url: URL; path: string } {
  const { url, base } = parsedService(route.backend);
  const path = joinBackendPath(base, url.pathname, rest);
  return { url, path: query === '' ? path : `${path}?${query}` };
}

export function forwardContextOf(route: ExtensionRoute, host: string, clientIp: string, proto: string, upgrade = false, assertion?: string): ForwardContext {
  // One object shape for every request, built without spreads (see proxy.ts on spreads in the hot path).
  const context: { -readonly [K in keyof ForwardContext]: ForwardContext[K] } = { host, clientIp, proto: proto === 'https' ? 'https' : 'http', user: route.principal };
  const application = route.application;
  if (application !== undefined) context.application = { name: `${application.namespace}/${application.name}`, project: application.project };
  if (upgrade) context.upgrade = true;
  if (assertion !== undefined) context.assertion = assertion;
  return context;
}
