/**
 * The connection to the Kubernetes API: where it is, who we are, and raw JSON requests.
 *
 * @kubernetes/client-node does what is easy to get wrong: reading a kubeconfig (its current
 * context, a token, a client certificate or exec credentials), the in-pod service account's
 * address and CA, TLS, and the watch stream. The pod's token is ours (useRotatingToken). Its typed API
 * classes are not used: they turn objects into model classes (dates parsed, unknown fields
 * dropped), and svc wants the objects as the API sends them, to give them to the same parser
 * as the manifests of a directory (docs/decisions.md, "Kubernetes store").
 */
import { readFileSync, statSync } from 'node:fs';
import type { KubeConfig, RequestContext, User } from '@kubernetes/client-node';
import { fetch } from 'undici';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface KubeClientOptions {
  /** A kubeconfig file; else KUBECONFIG, else the pod's service account. */
  readonly kubeconfig?: string | undefined;
  /** Overrides the context's (or the pod's) namespace. */
  readonly namespace?: string | undefined;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Prefix of the service account's files in a pod (tests point it at a temp dir). */
  readonly inClusterRoot?: string;
}

/** A Status answer of the API server (or no answer: code 0), with what was asked, for messages. */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly verb: string,
    readonly resource: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

export type WatchEvent = { readonly type: string; readonly object: Record<string, unknown> };

export interface KubeClient {
  readonly namespace: string;
  readonly server: string;
  /** One object (`name` given) or a list of `plural` in the namespace (`namespace` overrides it). */
  request(verb: Verb, plural: Plural, name?: string, body?: unknown, namespace?: string): Promise<Record<string, unknown>>;
  /** Resolves to a function that stops the watch; `done` is called once when it ends, with why. */
  watch(plural: Plural, namespace: string, query: Record<string, string>, onEvent: (event: WatchEvent) => void, done: (err: unknown) => void): Promise<() => void>;
}

export type Verb = 'get' | 'list' | 'create' | 'update';
const METHODS: Readonly<Record<Verb, 'GET' | 'POST' | 'PUT'>> = { get: 'GET', list: 'GET', create: 'POST', update: 'PUT' };
export type Plural = 'configmaps' | 'secrets' | 'applications';
const PREFIX: Readonly<Record<Plural, string>> = { configmaps: '/api/v1', secrets: '/api/v1', applications: '/apis/svc.io/v1alpha1' };

export function apiPath(plural: Plural, namespace: string, name?: string): string {
  const base = `${PREFIX[plural]}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * The library is loaded here, on first use, not at startup: its import takes about a second and
 * only `--kube` needs it (docs/decisions.md, "Kubernetes store"). Only the library: svc's own modules stay
 * static imports, so their classes (the errors) exist once.
 */
function library(): Promise<typeof import('@kubernetes/client-node')> {
  return import('@kubernetes/client-node');
}

export async function loadKubeConfig(options: KubeClientOptions): Promise<KubeConfig> {
  const env = options.env ?? process.env;
  const kc = new (await library()).KubeConfig();
  if (options.kubeconfig !== undefined) kc.loadFromFile(options.kubeconfig);
  else if (env['KUBECONFIG'] !== undefined && env['KUBECONFIG'] !== '') kc.loadFromDefault();
  else if (env['KUBERNETES_SERVICE_HOST'] !== undefined) useRotatingToken(kc, options.inClusterRoot);
  else throw new Error('no Kubernetes API to talk to: give --kubeconfig FILE or KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST)');
  if (kc.getCurrentCluster() === null) throw new Error('the kubeconfig has no current context with a cluster');
  return kc;
}

const TOKEN_PROVIDER = 'svc-service-account-token';
/** The library's authenticator interface, which its index does not export. */
type Authenticator = Parameters<KubeConfig['addAuthenticator']>[0];
type AuthOptions = Parameters<Authenticator['applyAuthentication']>[1];

/**
 * The pod's service account, with its token read again as soon as the kubelet rotates it. The
 * library's own token-file provider re-reads the file only once a minute; until then it sends
 * the old token, which an API server that already refuses it answers 401 (the store would be
 * down, every write a 503). Here the file is stat'ed on every request (requests are few: a LIST,
 * a WATCH every few minutes, a write) and read again when it is another file or was rewritten.
 */
function useRotatingToken(kc: KubeConfig, root: string | undefined): void {
  kc.loadFromCluster(root);
  const tokenFile = `${root ?? ''}${SERVICE_ACCOUNT_DIR}/token`;
  // Not `config.tokenFile`: the library's provider would claim the user before ours is asked.
  const user: User = { name: 'inClusterUser', authProvider: { name: TOKEN_PROVIDER, config: { path: tokenFile } } };
  kc.loadFromOptions({ clusters: kc.clusters, contexts: kc.contexts, users: [user], currentContext: kc.currentContext });
  kc.addAuthenticator(new RotatingTokenFile(tokenFile));
}

class RotatingTokenFile implements Authenticator {
  #token = '';
  #signature = '';

  constructor(private readonly file: string) {}

  isAuthProvider(user: User): boolean {
    return (user.authProvider as { name?: unknown } | undefined)?.name === TOKEN_PROVIDER;
  }

  async applyAuthentication(_user: User, opts: AuthOptions): Promise<void> {
    opts.headers = { ...(opts.headers as Record<string, string> | undefined), Authorization: `Bearer ${this.#current()}` };
  }

  #current(): string {
    try {
      const st = statSync(this.file);
      const signature = `${st.ino}:${st.mtimeMs}:${st.size}`;
      if (signature !== this.#signature) {
        this.#token = readFileSync(this.file, 'utf8').trim();
        this.#signature = signature;
      }
    } catch (err: unknown) {
      // Mid-swap or gone: the last token read is still the best guess; with none, say which file.
      if (this.#token === '') throw new Error(`cannot read the service account token ${this.file}: ${(err as { code?: string }).code ?? String(err)}`, { cause: err });
    }
    return this.#token;
  }
}

function namespaceOf(kc: KubeConfig, options: KubeClientOptions): string {
  if (options.namespace !== undefined && options.namespace !== '') return options.namespace;
  const fromContext = kc.getContextObject(kc.getCurrentContext())?.namespace;
  if (fromContext !== undefined && fromContext !== '') return fromContext;
  try {
    return readFileSync(`${SERVICE_ACCOUNT_DIR}/namespace`, 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

export async function openKubeClient(options: KubeClientOptions): Promise<KubeClient> {
  const { RequestContext: Request, Watch } = await library();
  const kc = await loadKubeConfig(options);
  const server = (kc.getCurrentCluster()?.server ?? '').replace(/\/$/, '');
  const watcher = new Watch(kc);
  const namespace = namespaceOf(kc, options);
  return {
    namespace,
    server,
    async request(verb, plural, name, body, inNamespace) {
      const path = apiPath(plural, inNamespace ?? namespace, name);
      const ctx = new Request(server + path, METHODS[verb] as ConstructorParameters<typeof Request>[1]);
      await kc.applySecurityAuthentication(ctx);
      const resource = name === undefined ? plural : `${plural} "${name}"`;
      let response;
      try {
        response = await fetch(server + path, {
          method: METHODS[verb],
          headers: { ...ctx.getHeaders(), accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...dispatcherOf(ctx),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
      } catch (err: unknown) {
        throw new KubeApiError(0, 'Unreachable', `the Kubernetes API at ${server} cannot be reached: ${causeOf(err)}`, verb, resource);
      }
      const text = await response.text();
      const parsed = parseJson(text);
      if (response.ok && parsed !== undefined) return parsed;
      const reason = typeof parsed?.['reason'] === 'string' ? parsed['reason'] : `HTTP ${response.status}`;
      const message = typeof parsed?.['message'] === 'string' ? parsed['message'] : text.slice(0, 200);
      throw new KubeApiError(response.status, reason, message, verb, resource);
    },
    async watch(plural, inNamespace, query, onEvent, done) {
      const controller = await watcher.watch(apiPath(plural, inNamespace), query, (type: string, object: unknown) => onEvent({ type, object: object as Record<string, unknown> }), done);
      return () => controller.abort();
    },
  };
}

function dispatcherOf(ctx: RequestContext): { dispatcher?: NonNullable<ReturnType<RequestContext['getDispatcher']>> } {
  const dispatcher = ctx.getDispatcher();
  return dispatcher === undefined ? {} : { dispatcher };
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function causeOf(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const code = (cause as { code?: unknown }).code;
  return typeof code === 'string' ? code : cause instanceof Error ? cause.message : String(cause);
}
