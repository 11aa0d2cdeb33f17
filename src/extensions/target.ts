/** Where an extension request goes: name and rest from the path, backend path, forwarding context. */
import type { ExtensionRoute } from './access.js';
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

/** The backend path and query for a route: base path of the service URL + the request's rest. */
export function backendTarget(route: ExtensionRoute, rest: string, query: string): { url: URL; path: string } {
  const url = new URL(route.backend.url);
  const path = joinBackendPath(basePathOf(url), url.pathname, rest);
  return { url, path: query === '' ? path : `${path}?${query}` };
}

export function forwardContextOf(route: ExtensionRoute, host: string, clientIp: string, proto: string, upgrade = false): ForwardContext {
  const application = route.application;
  return {
    host,
    clientIp,
    proto: proto === 'https' ? 'https' : 'http',
    identity: route.principal,
    ...(application !== undefined ? { application: { name: `${application.namespace}/${application.name}`, project: application.project } } : {}),
    ...(upgrade ? { upgrade } : {}),
  };
}

