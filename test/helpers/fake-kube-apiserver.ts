/**
 * A local STAND-IN for the Kubernetes API server: no real one can run on these machines. It
 * follows the documented REST API, and nothing here is Kubernetes code:
 *
 *   - "API Concepts" (kubernetes.io/docs/reference/using-api/api-concepts/): the REST paths
 *     /api/v1/namespaces/{ns}/{configmaps,secrets}[/{name}] and
 *     /apis/svc.io/v1alpha1/namespaces/{ns}/applications[/{name}] (and the all-namespaces
 *     lists); LIST answering a `resourceVersion` in the list's metadata; WATCH (`?watch=1`) as a
 *     stream of JSON lines `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":...}`,
 *     resumed from `resourceVersion`, with bookmarks when `allowWatchBookmarks=true`, and an
 *     ERROR event carrying a 410 `Expired` Status for a version that is compacted away;
 *     `labelSelector` and `fieldSelector=metadata.name=`.
 *   - the ConfigMap and Secret references (kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/):
 *     create (POST, 409 AlreadyExists), read, replace (PUT; a `metadata.resourceVersion` that is
 *     not the stored one answers 409 Conflict), patch (merge-patch+json, and
 *     strategic-merge-patch+json treated as a merge patch, which is what it means for these
 *     kinds), delete; a Secret's `stringData` folded into `data` on write.
 *   - "Status" objects for errors (404 NotFound, 409, 410, 403 Forbidden, 401), and discovery
 *     (/api, /apis, /api/v1, /apis/svc.io/v1alpha1, /version) so that kubectl resolves names.
 *   - "Authenticating" (kubernetes.io/docs/reference/access-authn-authz/authentication/):
 *     bearer tokens; over TLS, client certificates signed by the test CA (CN is the user).
 *   - "Using RBAC Authorization": `rules` (verbs, resources, resourceNames) when given; a request
 *     no rule allows is answered 403 with the message the API server writes.
 *
 * Test levers: `stop()`/`start()` (down and back on the same port), `rotateToken()` (the old
 * token refused from now on), `expireWatches()` (every open watch gets ERROR 410 and history
 * before now is compacted), `store.put(..., notify=false)` (a change whose event a watcher never
 * saw).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { kubeconfigText } from './kubeconfig.js';
import { apiVersionOf, KubeError, labelsOf, mergePatch, ObjectStore, parseSelector, RESOURCES, type KubeObject, type ResourceType, type StoredEvent } from './fake-kube-objects.js';

export interface RbacRule {
  readonly verbs: readonly string[];
  readonly resources: readonly string[];
  readonly resourceNames?: readonly string[];
}

export interface FakeKubeOptions {
  readonly token?: string;
  /** TLS with this server certificate; client certificates signed by `ca` authenticate too. */
  readonly tls?: { readonly certPem: string; readonly keyPem: string; readonly caPem: string };
  readonly bookmarkMs?: number;
}

export interface FakeKube {
  readonly url: string;
  readonly token: string;
  readonly store: ObjectStore;
  /** undefined: everything allowed. */
  rules: readonly RbacRule[] | undefined;
  /** Requests served, `VERB path`, for assertions. */
  readonly requests: string[];
  /** Every authorized request as `verb resource name` (`*` for a collection), to compare with a Role. */
  readonly authorized: Set<string>;
  /** Error answers by status code (409s show that writers really competed). */
  readonly refusals: Map<number, number>;
  kubeconfig(namespace: string): string;
  /** Accepts only `next` as the bearer token from now on, as after a service-account token rotation whose old token expired. */
  rotateToken(next: string): void;
  expireWatches(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const USER = 'system:serviceaccount:svc:svc';

export async function startFakeKube(options: FakeKubeOptions = {}): Promise<FakeKube> {
  let token = options.token ?? 'test-token-' + Math.random().toString(36).slice(2);
  const store = new ObjectStore();
  const watches = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  let port = 0;
  let server: Server | undefined;
  const fake: FakeKube = {
    url: '',
    token,
    store,
    rules: undefined,
    requests: [],
    refusals: new Map(),
    authorized: new Set(),
    kubeconfig: (namespace) => kubeconfigText(fake.url, options.tls?.caPem, { name: 'svc', user: { token } }, namespace),
    rotateToken(next) {
      token = next;
      (fake as { token: string }).token = next;
    },
    expireWatches() {
      store.compactedRv = store.rv;
      for (const res of watches) {
        writeEvent(res, 'ERROR', new KubeError(410, 'Expired', `too old resource version (${store.compactedRv})`).status());
        res.end();
      }
      watches.clear();
    },
    async start() {
      const handler = (req: IncomingMessage, res: ServerResponse): void => {
        handle(req, res).catch((err: unknown) => {
          const e = err instanceof KubeError ? err : new KubeError(500, 'InternalError', String(err));
          fake.refusals.set(e.code, (fake.refusals.get(e.code) ?? 0) + 1);
          if (!res.headersSent) send(res, e.code, e.status());
          else res.end();
        });
      };
      const s =
        options.tls === undefined
          ? createHttpServer(handler)
          : createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem, ca: options.tls.caPem, requestCert: true, rejectUnauthorized: false }, handler);
      s.on('connection', (socket: Socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => resolve());
      });
      port = (s.address() as AddressInfo).port;
      server = s;
      (fake as { url: string }).url = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (s === undefined) return;
      for (const res of watches) res.destroy();
      watches.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    close: () => fake.stop(),
  };

  function authenticate(req: IncomingMessage): string | undefined {
    const header = req.headers.authorization;
    if (header === `Bearer ${token}`) return USER;
    const socket = req.socket as Partial<TLSSocket>;
    if (socket.authorized === true) {
      const cn = socket.getPeerCertificate?.().subject?.CN;
      if (typeof cn === 'string') return cn;
    }
    return undefined;
  }

  function authorize(verb: string, type: ResourceType, namespace: string, name: string | undefined): void {
    const rules = fake.rules;
    fake.authorized.add(`${verb} ${type.plural} ${name ?? '*'}`);
    if (rules === undefined) return;
    const ok = rules.some((r) => r.verbs.includes(verb) && r.resources.includes(type.plural) && (r.resourceNames === undefined || (name !== undefined && r.resourceNames.includes(name))));
    if (ok) return;
    fake.authorized.delete(`${verb} ${type.plural} ${name ?? '*'}`);
    const what = name === undefined ? type.plural : `${type.plural} "${name}"`;
    throw new KubeError(403, 'Forbidden', `${what} is forbidden: User "${USER}" cannot ${verb} resource "${type.plural}" in API group "${type.group}" in the namespace "${namespace}"`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    fake.requests.push(`${method} ${url.pathname}${url.search} ${req.headers['content-type'] ?? ''}`.trimEnd());
    if (authenticate(req) === undefined) throw new KubeError(401, 'Unauthorized', 'Unauthorized');
    if (method === 'GET' && discovery(url.pathname, res)) return;
    const route = parsePath(url.pathname);
    if (route === undefined) throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
    const { type, namespace, name } = route;
    const q = url.searchParams;
    if (method === 'GET' && name === undefined) {
      const watch = q.get('watch') === '1' || q.get('watch') === 'true';
      authorize(watch ? 'watch' : 'list', type, namespace ?? '', undefined);
      return watch ? serveWatch(res, type, namespace, q) : serveList(res, type, namespace, q);
    }
    if (namespace === undefined) throw new KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    if (method === 'POST' && name === undefined) {
      authorize('create', type, namespace, undefined);
      const body = normalise(type, await readJson(req));
      const n = String(body.metadata['name'] ?? '');
      if (n === '') throw new KubeError(422, 'Invalid', `${type.kind} "" is invalid: metadata.name: Required value`);
      if (store.get(type.plural, namespace, n) !== undefined) throw new KubeError(409, 'AlreadyExists', `${type.plural} "${n}" already exists`);
      return send(res, 201, store.put(type, namespace, body));
    }
    if (name === undefined) throw new KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    const verb = { GET: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method];
    if (verb === undefined) throw new KubeError(405, 'MethodNotAllowed', `method ${method} not allowed`);
    authorize(verb, type, namespace, name);
    const current = store.get(type.plural, namespace, name);
    const notFound = new KubeError(404, 'NotFound', `${type.plural}${type.group === '' ? '' : `.${type.group}`} "${name}" not found`);
    if (method === 'GET') {
      if (current === undefined) throw notFound;
      return send(res, 200, current);
    }
    if (method === 'DELETE') {
      const gone = store.delete(type.plural, namespace, name);
      if (gone === undefined) throw notFound;
      return send(res, 200, gone);
    }
    if (current === undefined) throw notFound; // no create-on-update for these kinds
    const input = await readJson(req);
    let next: KubeObject;
    if (method === 'PUT') next = normalise(type, input);
    else {
      const kind = (req.headers['content-type'] ?? '').split(';')[0];
      if (kind !== 'application/merge-patch+json' && kind !== 'application/strategic-merge-patch+json') {
        throw new KubeError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json`);
      }
      next = normalise(type, mergePatch(current, input));
    }
    const precondition = (method === 'PUT' ? next : (input as KubeObject)).metadata?.['resourceVersion'];
    if (precondition !== undefined && precondition !== '' && precondition !== current.metadata['resourceVersion']) {
      throw new KubeError(409, 'Conflict', `Operation cannot be fulfilled on ${type.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    if (next.metadata['name'] !== undefined && next.metadata['name'] !== name) throw new KubeError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    return send(res, 200, store.put(type, namespace, { ...next, metadata: { ...next.metadata, name } }));
  }

  function serveList(res: ServerResponse, type: ResourceType, namespace: string | undefined, q: URLSearchParams): void {
    const items = filterByField(store.list(type.plural, namespace, q.get('labelSelector') ?? undefined), q);
    send(res, 200, { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata: { resourceVersion: String(store.rv) }, items });
  }

  function serveWatch(res: ServerResponse, type: ResourceType, namespace: string | undefined, q: URLSearchParams): void {
    const selector = parseSelector(q.get('labelSelector') ?? undefined);
    const fieldName = fieldSelectorName(q);
    const matches = (e: { plural: string; namespace: string; object: KubeObject }): boolean =>
      e.plural === type.plural && (namespace === undefined || e.namespace === namespace) && selector(labelsOf(e.object)) && (fieldName === undefined || e.object.metadata['name'] === fieldName);
    const from = q.get('resourceVersion');
    // Unset or "0": synthetic ADDED events for what exists now, then changes.
    const backlog: { type: string; object: KubeObject }[] =
      from === null || from === '' || from === '0'
        ? filterByField(store.list(type.plural, namespace, q.get('labelSelector') ?? undefined), q).map((object) => ({ type: 'ADDED', object }))
        : store.since(Number(from), type.plural).filter(matches);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    for (const e of backlog) writeEvent(res, e.type, e.object);
    watches.add(res);
    const unsubscribe = store.subscribe((e: StoredEvent) => {
      if (matches(e)) writeEvent(res, e.type, e.object);
    });
    const bookmarks =
      q.get('allowWatchBookmarks') === 'true'
        ? setInterval(() => writeEvent(res, 'BOOKMARK', { kind: type.kind, apiVersion: apiVersionOf(type), metadata: { resourceVersion: String(store.rv) } }), options.bookmarkMs ?? 1000)
        : undefined;
    const timeout = Number(q.get('timeoutSeconds') ?? '0');
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    res.on('close', () => {
      watches.delete(res);
      unsubscribe();
      clearInterval(bookmarks);
      clearTimeout(timer);
    });
  }

  await fake.start();
  return fake;
}

function writeEvent(res: ServerResponse, type: string, object: unknown): void {
  if (!res.writableEnded && !res.destroyed) res.write(JSON.stringify({ type, object }) + '\n');
}

function fieldSelectorName(q: URLSearchParams): string | undefined {
  const field = q.get('fieldSelector');
  if (field === null || field === '') return undefined;
  const m = /^metadata\.name==?(.+)$/.exec(field);
  if (m === null) throw new KubeError(400, 'BadRequest', `field label not supported: ${field}`);
  return m[1];
}

function filterByField(items: KubeObject[], q: URLSearchParams): KubeObject[] {
  const name = fieldSelectorName(q);
  return name === undefined ? items : items.filter((o) => o.metadata['name'] === name);
}

/** What the API server does to a written object of this type: kind and apiVersion set, stringData folded into data. */
function normalise(type: ResourceType, input: unknown): KubeObject {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new KubeError(400, 'BadRequest', 'the body is not an object');
  const obj = { ...(input as Record<string, unknown>) } as KubeObject;
  if (typeof obj.metadata !== 'object' || obj.metadata === null) obj.metadata = {};
  if (obj['kind'] !== undefined && obj['kind'] !== type.kind) throw new KubeError(400, 'BadRequest', `the kind ${String(obj['kind'])} does not match ${type.kind}`);
  if (type.kind === 'Secret' && typeof obj['stringData'] === 'object' && obj['stringData'] !== null) {
    const data = { ...((obj['data'] as Record<string, string> | undefined) ?? {}) };
    for (const [k, v] of Object.entries(obj['stringData'] as Record<string, string>)) data[k] = Buffer.from(String(v)).toString('base64');
    obj['data'] = data;
    delete obj['stringData'];
  }
  return obj;
}

function parsePath(pathname: string): { type: ResourceType; namespace: string | undefined; name: string | undefined } | undefined {
  const m = /^\/(?:api\/v1|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?$/.exec(pathname);
  if (m === null) return undefined;
  const [, group = '', version = 'v1', namespace, plural, name] = m;
  const type = RESOURCES.find((t) => t.group === group && t.version === version && t.plural === plural);
  return type === undefined ? undefined : { type, namespace, name };
}

function discovery(pathname: string, res: ServerResponse): boolean {
  const resources = (group: string) =>
    RESOURCES.filter((t) => t.group === group).map((t) => ({
      name: t.plural,
      singularName: t.kind.toLowerCase(),
      namespaced: true,
      kind: t.kind,
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
      ...(t.plural === 'configmaps' ? { shortNames: ['cm'] } : {}),
      ...(t.plural === 'applications' ? { shortNames: ['app', 'apps'] } : {}),
    }));
  const answers: Record<string, unknown> = {
    '/version': { major: '1', minor: '32', gitVersion: 'v1.32.0-stand-in', platform: 'linux/amd64' },
    '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] },
    '/apis': {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [{ name: 'svc.io', versions: [{ groupVersion: 'svc.io/v1alpha1', version: 'v1alpha1' }], preferredVersion: { groupVersion: 'svc.io/v1alpha1', version: 'v1alpha1' } }],
    },
    '/api/v1': { kind: 'APIResourceList', groupVersion: 'v1', resources: resources('') },
    '/apis/svc.io/v1alpha1': { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'svc.io/v1alpha1', resources: resources('svc.io') },
  };
  const answer = answers[pathname];
  if (answer === undefined) return false;
  send(res, 200, answer);
  return true;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new KubeError(400, 'BadRequest', 'the body is not JSON');
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

