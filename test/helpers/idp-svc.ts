/**
 * svc with the bundled provider in front of one echo backend, as the identity provider's
 * end-to-end tests (test/e2e/idp-*.test.ts) start it: its url first (an upstream is told the
 * callback before svc starts), then idp.config's connectors, the extensions (the first names the
 * backend), the policy and svc-secret, and one close for the server, the backend and the config.
 */
import { rm } from 'node:fs/promises';
import YAML from 'yaml';
import type { AuditTrail } from '../../src/audit/trail.js';
import type { PasswordConnector } from '../../connectors/connector.js';
import type { ConnectorSource } from '../../src/idp/connectors/connector-source.js';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { singleConnector } from './fake-password-connector.js';
import { configMap, idpConfigDir, secret, tempConfigDir, type IdpConfig } from './manifests.js';
import { freePort } from './peers.js';
import { startTestServer, type TestServer } from './server.js';

export interface IdpSvcAddress {
  readonly port: number;
  readonly url: string;
}

export interface IdpSvc {
  readonly url: string;
  readonly server: TestServer;
  readonly backend: Backend;
  /** Its config dir (to change a file while it runs). */
  readonly dir: string;
  close(): Promise<void>;
}

/** A free loopback port and svc's url on it. */
export async function idpSvcAddress(): Promise<IdpSvcAddress> {
  const port = await freePort();
  return { port, url: `http://127.0.0.1:${port}` };
}

/** What the server is started with besides its config dir: a Redis, an environment. */
export interface IdpSvcOptions {
  readonly redisUrl?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The server's audit trail (a collecting one, to assert events). */
  readonly audit?: AuditTrail;
}

export async function startIdpSvc(at: IdpSvcAddress, config: Omit<IdpConfig, 'url' | 'backendUrl'>, options: IdpSvcOptions = {}): Promise<IdpSvc> {
  const backend = await echoBackend(config.extensions[0] ?? 'tools');
  let dir: string | undefined;
  try {
    dir = idpConfigDir({ ...config, url: at.url, backendUrl: backend.url });
    const server = await startTestServer(dir, { port: at.port, ...options });
    const configDir = dir;
    return {
      url: at.url,
      server,
      backend,
      dir: configDir,
      async close() {
        await server.close(1000);
        await backend.close();
        await rm(configDir, { recursive: true, force: true });
      },
    };
  } catch (err: unknown) {
    await backend.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** idp.config's placeholder for a provider whose one connector, `directory`, the test supplies in process. */
const PLACEHOLDER_CONNECTORS = [{ type: 'ldap', id: 'directory', name: 'Directory', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }];

/**
 * svc with the bundled provider whose one connector, `directory`, is `connector` (a stand-in of
 * test/helpers/fake-password-connector.ts), no extension and an empty policy: for the tests of
 * the provider itself. `dir` is its config dir: the calling describe removes it (cleanUpTempDirs).
 * `source` replaces that one connector with a source of several (a chooser to show).
 */
export async function startPasswordIdpSvc(connector: PasswordConnector, options: IdpSvcOptions & { readonly secretKey: string; readonly source?: ConnectorSource }): Promise<IdpSvcAddress & { readonly server: TestServer; readonly dir: string }> {
  const at = await idpSvcAddress();
  const dir = tempConfigDir({
    'svc-cm.yaml': configMap('svc-cm', { url: at.url, 'idp.config': YAML.stringify({ connectors: PLACEHOLDER_CONNECTORS }) }),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
    'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': options.secretKey }),
  });
  const server = await startTestServer(dir, {
    port: at.port, ...(options.redisUrl !== undefined ? { redisUrl: options.redisUrl } : {}), ...(options.env !== undefined ? { env: options.env } : {}),
    ...(options.audit !== undefined ? { audit: options.audit } : {}),
    idp: { connectors: () => options.source ?? singleConnector('directory', connector) },
  });
  return { ...at, server, dir };
}
