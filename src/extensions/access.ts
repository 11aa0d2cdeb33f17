/**
 * The checks in front of every extension request, HTTP or WebSocket, in DESIGN §6 order:
 * extension exists and is enabled (404) → authenticated (401) → Svc-Application-Name well formed
 * (400) and known (403) → rights `extensions, <method>, <project>/<name>` (403, naming the
 * method and the object; a `*` line allows every method, ../rbac/methods.ts) → a
 * backend for the cluster (404 no_backend). Pure and synchronous: no HTTP, no await, so the
 * settings read here and the connection pool picked right after belong to one configuration.
 */
import type { AppCatalog, Application } from '../apps/catalog.js';
import { ApplicationNotFound, ExtensionNotFound, InvalidRequest, PermissionDenied, SecondFactorEnrolmentRequired, Unauthenticated, type SvcError } from '../errors.js';
import { printable } from '../lib/printable.js';
import type { Rights } from '../rbac/rights.js';
import { extensionAction } from '../rbac/methods.js';
import { refusal } from '../rbac/refusal.js';
import type { Principal } from '../principal.js';
import type { BackendService, ExtensionConfig } from './config.js';
import { selectBackend } from './select-backend.js';

export const APPLICATION_HEADER = 'svc-application-name';
export const EXTENSION_RESOURCE = 'extensions';

/** `<namespace>/<name>`: a DNS-1123 label, then a DNS-1123 subdomain (dot-separated labels, as Kubernetes checks them). */
const APPLICATION_NAME = /^(?=[^/]{1,63}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?\/(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The settings these checks read. */
export interface AccessSettings {
  readonly extensions: readonly ExtensionConfig[];
  readonly catalog: AppCatalog;
}

export interface ExtensionRequest {
  readonly name: string;
  readonly principal: Principal | undefined;
  /** Why a token that was sent was refused (expired, revoked…), for the 401. */
  readonly authError?: SvcError | undefined;
  /**
   * The Svc-Application-Name header (undefined or '' when absent), or why the request's way of
   * naming the application was refused (handshake-application.ts), raised at this step.
   */
  readonly application: string | InvalidRequest | undefined;
  /** The HTTP method as sent, which is the one forwarded (authorized-request.ts; a handshake is always a GET). */
  readonly method: string;
}

export interface ExtensionRoute {
  readonly extension: ExtensionConfig;
  readonly principal: Principal;
  readonly application: Application | undefined;
  readonly backend: BackendService;
}

const byName = new WeakMap<readonly ExtensionConfig[], ReadonlyMap<string, ExtensionConfig>>();

/** The configured extension by name (enabled or not), indexed once per configuration. */
export function findExtension(settings: AccessSettings, name: string): ExtensionConfig | undefined {
  let index = byName.get(settings.extensions);
  if (index === undefined) {
    index = new Map(settings.extensions.map((e) => [e.name, e]));
    byName.set(settings.extensions, index);
  }
  return index.get(name);
}

export function routeExtensionRequest(request: ExtensionRequest, settings: AccessSettings, rights: Pick<Rights, 'allows'> & Partial<Pick<Rights, 'explain'>>): ExtensionRoute {
  const extension = enabledExtension(settings, request.name);
  const principal = request.principal;
  if (principal === undefined) throw request.authError ?? new Unauthenticated();
  if (principal.enrolmentOnly === true) throw new SecondFactorEnrolmentRequired();
  const application = namedApplication(request.application, settings);
  const object = `${application?.project ?? '*'}/${extension.name}`;
  const action = extensionAction(request.method);
  if (!rights.allows(principal, EXTENSION_RESOURCE, action, object)) {
    throw new PermissionDenied(
      `'${principal.username}' may not use extension '${extension.name}' with ${printable(action.toUpperCase())}: no rights rule allows ${EXTENSION_RESOURCE}, *, ${object} nor ${EXTENSION_RESOURCE}, ${printable(action)}, ${object}`,
      { decision: refusal(rights, principal, EXTENSION_RESOURCE, action, object) },
    );
  }
  return { extension, principal, application, backend: selectBackend(extension, application, settings.catalog) };
}

function enabledExtension(settings: AccessSettings, name: string): ExtensionConfig {
  const extension = findExtension(settings, name);
  if (extension === undefined) throw new ExtensionNotFound(`extension '${printable(name)}' is not configured`);
  if (!extension.enabled) throw new ExtensionNotFound(`extension '${extension.name}' is not enabled`);
  return extension;
}

function namedApplication(header: string | InvalidRequest | undefined, settings: AccessSettings): Application | undefined {
  if (header instanceof InvalidRequest) throw header;
  if (header === undefined || header === '') return undefined;
  if (!APPLICATION_NAME.test(header)) {
    throw new InvalidRequest(`Svc-Application-Name must be <namespace>/<application-name> (lower-case DNS names), not '${printable(header)}'`);
  }
  const application = settings.catalog.applications.get(header);
  if (application === undefined) throw new ApplicationNotFound(`application '${header}' does not exist`);
  return application;
}
