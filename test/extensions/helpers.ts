/** Real backends and a real svc for the extension proxy tests. */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { renameSync, writeFileSync } from 'node:fs';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import YAML from 'yaml';
import { configMap, secret } from '../helpers/manifests.js';
import type { TestServer } from '../helpers/server.js';
import { login as loginAs } from '../helpers/accounts-fixture.js';

export interface Backend {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export async function listen(server: Server): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}` };
}

export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function startBackend(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Backend> {
  const server = createServer(handler);
  const { port, url } = await listen(server);
  return { server, port, url, close: () => closeServer(server) };
}

export interface Echo {
  readonly backend: string;
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly rawHeaders: string[];
  readonly bodyLength: number;
  /** SHA-256 of the whole body received, hex. */
  readonly bodySha256: string;
  readonly body: string;
}

/**
 * Answers with what it received, as JSON (body echoed when short); with the request header
 * `x-echo-body: raw`, answers with the body received itself, byte for byte, as octet-stream.
 */
export function echoBackend(label: string): Promise<Backend> {
  return startBackend((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.headers['x-echo-body'] === 'raw') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-backend': label });
        res.end(body);
        return;
      }
      const echo: Echo = {
        backend: label,
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        bodyLength: body.length,
        bodySha256: createHash('sha256').update(body).digest('hex'),
        body: body.length <= 1024 ? body.toString('utf8') : '',
      };
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': [
        'svc.token=planted; Path=/', 'theirs=1; Path=/',
        // The bundled identity provider's cookies and their variants: a backend must not plant them either.
        '_session=planted; Path=/api/idp', '_session.sig=planted; Path=/api/idp', '_session.legacy=planted; Path=/api/idp',
        '_interaction=planted; Path=/api/idp', '_interaction.sig=planted; Path=/api/idp', '_interaction_resume=planted; Path=/api/idp',
      ], 'x-backend': label });
      res.end(JSON.stringify(echo));
    });
  });
}

export const PASSWORD = 'correct horse battery staple';
const HASH = bcrypt.hashSync(PASSWORD, 4);

export interface StoreFiles {
  readonly extensionConfig: unknown;
  readonly policy: string;
  readonly accounts?: readonly string[];
  readonly extra?: Record<string, string>;
}

/** The three stores plus extra files (applications, cluster and TLS secrets). */
export function storeFiles(input: StoreFiles): Record<string, string> {
  const accounts = input.accounts ?? [];
  return {
    'svc-cm.yaml': svcCm(input.extensionConfig, accounts),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': input.policy, 'policy.default': '' }),
    'svc-secret.yaml': secret('svc-secret', {
      'server.secretkey': 'extension-proxy-test-key-0123456789abcdef',
      'admin.password': HASH,
      ...Object.fromEntries(accounts.map((a) => [`accounts.${a}.password`, HASH])),
    }),
    ...(input.extra ?? {}),
  };
}

function svcCm(extensionConfig: unknown, accounts: readonly string[]): string {
  return configMap('svc-cm', {
    'extension.config': YAML.stringify(extensionConfig),
    ...Object.fromEntries(accounts.map((a) => [`accounts.${a}`, 'login'])),
  });
}

/** Rewrites svc-cm atomically and resolves once the server applied it. */
export async function rewriteExtensionConfig(server: TestServer, dir: string, extensionConfig: unknown, accounts: readonly string[]): Promise<void> {
  const applied = new Promise<void>((resolve) => {
    const off = server.services.settings.onChange(() => {
      off();
      resolve();
    });
  });
  const tmp = join(dir, '.svc-cm.yaml.tmp');
  writeFileSync(tmp, svcCm(extensionConfig, accounts));
  renameSync(tmp, join(dir, 'svc-cm.yaml'));
  await applied;
}

export function login(server: TestServer, username: string): Promise<string> {
  return loginAs(server.url, username, PASSWORD);
}

/**
 * Writes `text` on a fresh connection and collects what comes back until the server closes it,
 * or `waitMs` passed (then `closed` is false: the server left the connection hanging).
 */
export function rawExchange(port: number, text: string, waitMs = 2_000): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data, closed: false });
    }, waitMs);
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, closed: true });
    });
    socket.write(text);
  });
}
