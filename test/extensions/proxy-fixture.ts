/**
 * The extension proxy's test bed, shared by the proxy-*.test.ts files: real backends (an echo,
 * backends per cluster, one that never answers, one that resets, one that floods, ...), a config
 * dir naming them, and a running svc with logged-in users. `useProxyFixture()` starts them before
 * the calling describe() and stops them after.
 *
 * The fixture is exported as module bindings (`export let`), assigned in the before hook: ES
 * modules give importers live bindings, so a test reads `server`, `echo` or `call` as if they
 * were its own. The test files run one after the other, each with a fresh bed.
 */
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { request } from 'undici';
import { application, clusterSecret, tempConfigDir } from '../helpers/manifests.js';
import { removeTempDir } from '../helpers/temp-dir.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { echoBackend, login, startBackend, storeFiles, type Backend } from './helpers.js';

export const ACCOUNTS = ['alice', 'bob', 'carol', 'dave'];
const POLICY = [
  'p, role:team-a, extensions, *, team-a/*, allow',
  'g, alice, role:team-a',
  'p, carol, extensions, *, */echo, allow',
  'p, carol, extensions, *, */multi, allow',
  // One method only (and HEAD with it).
  'p, dave, extensions, get, */echo, allow',
].join('\n');

export let server: TestServer;
export let dir: string;
export let echo: Backend, inCluster: Backend, prod: Backend, idle: Backend, reset: Backend, leaky: Backend, ownId: Backend, chunky: Backend, flood: Backend;
/** When the flood backend saw its response closed (the proxy let go of it), by request. */
export const floodClosed: number[] = [];
export let refusedPort: number;
export const idleSockets = new Set<Socket>();
export let idleWaiting = 0;
export let token: Record<string, string>;
export let extensions: (overrides?: { echoUrl?: string }) => unknown;

/** Starts the bed before the calling describe() and stops it after. */
export function useProxyFixture(): void {
  before(async () => {
    [echo, inCluster, prod] = await Promise.all([echoBackend('echo'), echoBackend('in-cluster'), echoBackend('prod')]);
    idle = await startBackend((_req, res) => {
      // Accepts, never answers; counts the requests it holds (a spare pooled connection is no leak).
      idleWaiting++;
      res.once('close', () => idleWaiting--);
    });
    idle.server.on('connection', (s: Socket) => idleSockets.add(s));
    leaky = await startBackend((req, res) => {
      const csp = req.headers['x-csp'];
      res.writeHead(200, { connection: 'keep-alive, X-Internal-Addr', 'x-internal-addr': '10.1.2.3:8080', 'x-public': 'yes', ...(typeof csp === 'string' ? { 'content-security-policy': csp } : {}) });
      res.end('ok');
    });
    reset = await startBackend((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part of the body, then the backend dies');
      setTimeout(() => res.socket?.resetAndDestroy(), 50);
    });
    ownId = await startBackend((_req, res) => {
      res.writeHead(200, { 'X-Request-Id': 'from-backend' });
      res.end('ok');
    });
    chunky = await startBackend((req, res) => {
      if (req.url === '/sized') {
        // One declared length, written in a thousand pieces over several ticks.
        res.writeHead(200, { 'content-length': '10000' });
        let sent = 0;
        const more = (): void => {
          for (let i = 0; i < 100 && sent < 1000; i++, sent++) res.write('0123456789');
          if (sent < 1000) setImmediate(more);
          else res.end();
        };
        more();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('abc');
      setTimeout(() => {
        res.write('abc');
        res.end('abc');
      }, 20);
    });
    flood = await startBackend((_req, res) => {
      // Endless: writes whenever the connection drains, so only the proxy letting go ends it.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on('drain', pump);
      res.once('close', () => floodClosed.push(Date.now()));
      pump();
    });
    refusedPort = await freePort();
    extensions = (overrides = {}) => ({
      extensions: [
        { name: 'echo', enabled: true, backend: { services: [{ url: overrides.echoUrl ?? `${echo.url}/base` }] } },
        { name: 'off', enabled: false, backend: { services: [{ url: echo.url }] } },
        { name: 'ui', enabled: true, contentSecurityPolicy: 'sandbox allow-scripts', backend: { services: [{ url: leaky.url }] } },
        { name: 'trusted', enabled: true, contentSecurityPolicy: false, backend: { services: [{ url: echo.url }] } },
        { name: 'multi', enabled: true, backend: { services: [{ url: inCluster.url, clusterName: 'in-cluster' }, { url: `${prod.url}/p/`, clusterName: 'prod' }] } },
        { name: 'idle', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: idle.url }] } },
        { name: 'idle-long', enabled: true, backend: { idleConnTimeout: '30s', services: [{ url: idle.url }] } },
        { name: 'reset', enabled: true, backend: { services: [{ url: reset.url }] } },
        { name: 'down', enabled: true, backend: { services: [{ url: `http://127.0.0.1:${refusedPort}` }] } },
        { name: 'leaky', enabled: true, backend: { services: [{ url: leaky.url }] } },
        { name: 'own-id', enabled: true, backend: { services: [{ url: ownId.url }] } },
        { name: 'chunky', enabled: true, backend: { services: [{ url: chunky.url }] } },
        { name: 'flood', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: flood.url }] } },
      ],
    });
    dir = tempConfigDir(
      storeFiles({
        extensionConfig: extensions(),
        policy: POLICY,
        accounts: ACCOUNTS,
        extra: {
          'apps.yaml': [
            application('argocd', 'app-a', 'team-a', { name: 'in-cluster' }),
            application('argocd', 'app-b', 'team-a', { server: 'https://prod.example.com' }),
            application('argocd', 'app-x', 'team-a', { name: 'nowhere' }),
            application('argocd', 'app-c', 'team-c', { name: 'in-cluster' }),
          ].join('---\n'),
          'cluster.yaml': clusterSecret('cluster-prod', 'prod', 'https://prod.example.com/'),
        },
      }),
    );
    server = await startTestServer(dir);
    token = Object.fromEntries(await Promise.all(['admin', ...ACCOUNTS].map(async (u) => [u, await login(server, u)] as const)));
  });

  after(async () => {
    for (const s of idleSockets) s.destroy();
    await server.close();
    await Promise.all([echo, inCluster, prod, idle, reset, leaky, ownId, chunky, flood].map((b) => b.close()));
    removeTempDir(dir);
  });
}

export async function call(path: string, user: string | undefined, headers: Record<string, string> = {}, init: { method?: string; body?: string | Buffer } = {}) {
  const res = await request(`${server.url}${path}`, {
    method: (init.method ?? 'GET') as 'GET',
    headers: { ...(user !== undefined ? { authorization: `Bearer ${token[user]}` } : {}), ...headers },
    body: init.body ?? null,
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/** node:http sends the path exactly as written (fetch and undici normalise `%2e%2e` first). */
export function raw(path: string, user: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: server.port, path, headers: { authorization: `Bearer ${token[user]}`, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The current values of Prometheus series, 0 for one not exported yet. */
export async function metricValues(series: readonly string[]): Promise<number[]> {
  const lines = (await (await fetch(`${server.url}/metrics`)).text()).split('\n');
  return series.map((s) => Number(lines.find((l) => l.startsWith(`${s} `))?.slice(s.length + 1) ?? 0));
}
