/** svc with oidc.config pointing at a test provider on HTTPS (test-provider.ts), and a login through it. */
import YAML from 'yaml';
import type { AuditTrail } from '../../src/audit/trail.js';
import { configMap, secret, tempConfigDir } from './manifests.js';
import { freePort } from './peers.js';
import { startTestServer, type TestServer } from './server.js';
import type { SsoBrowser } from './sso-browser.js';
import { removeTempDir } from './temp-dir.js';
import type { TestCa } from './test-ca.js';
import { PROVIDER_CLIENT_SECRET, providerBrowsers, startTestProvider, type TestProvider } from './test-provider.js';
import { echoExtension, SSO_POLICY } from './test-issuer.js';

export const SECRET_KEY = 'sso-test-secret-key-0123456789abcdef';

export interface SsoSetup {
  readonly provider: TestProvider;
  readonly svc: TestServer;
  readonly browser: () => SsoBrowser;
  close(): Promise<void>;
}

export interface SetupOptions {
  readonly ca: TestCa;
  readonly oidc?: Record<string, unknown>;
  readonly tls?: 'rootCA' | 'none' | 'skip';
  readonly idTokenTtlSeconds?: number;
  readonly redisUrl?: string;
  readonly extensionUrl?: string;
  /** The provider sends logout tokens to svc's /auth/backchannel-logout. */
  readonly backchannelLogout?: boolean;
  readonly audit?: AuditTrail;
}

export async function setupSso(options: SetupOptions): Promise<SsoSetup> {
  const port = await freePort();
  const svcUrl = `http://127.0.0.1:${port}`;
  const provider = await startTestProvider({
    ca: options.ca,
    redirectUris: [`${svcUrl}/auth/callback`],
    ...(options.backchannelLogout === true ? { backchannelLogoutUri: `${svcUrl}/auth/backchannel-logout` } : {}),
    ...(options.idTokenTtlSeconds !== undefined ? { idTokenTtlSeconds: options.idTokenTtlSeconds } : {}),
  });
  const tls = options.tls ?? 'rootCA';
  const oidc = {
    name: 'Corp', issuer: provider.issuer, clientID: 'svc', clientSecret: '$oidc.clientSecret',
    ...(tls === 'rootCA' ? { rootCA: options.ca.caPem } : {}),
    ...options.oidc,
  };
  const dir = tempConfigDir({
    'svc-cm.yaml': configMap('svc-cm', {
      url: svcUrl,
      'oidc.config': YAML.stringify(oidc),
      ...(tls === 'skip' ? { 'oidc.tls.insecure.skip.verify': 'true' } : {}),
      ...(options.extensionUrl !== undefined ? { 'extension.config': echoExtension(options.extensionUrl) } : {}),
    }),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': SSO_POLICY }),
    'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'admin.password': '', 'oidc.clientSecret': PROVIDER_CLIENT_SECRET }),
  });
  let svc: TestServer;
  try {
    svc = await startTestServer(dir, { port, ...(options.redisUrl !== undefined ? { redisUrl: options.redisUrl } : {}), ...(options.audit !== undefined ? { audit: options.audit } : {}) });
  } catch (err: unknown) {
    removeTempDir(dir);
    await provider.close();
    throw err;
  }
  const browsers = providerBrowsers(options.ca, provider.issuer);
  return {
    provider,
    svc,
    browser: browsers.browser,
    async close() {
      await svc.close(1000);
      await provider.close();
      await browsers.close();
      removeTempDir(dir);
    },
  };
}

export async function ssoLogin(setup: SsoSetup, account: string, returnUrl = '/apps'): Promise<{ browser: SsoBrowser; token: string; landed: string }> {
  const browser = setup.browser();
  const { url, res } = await browser.browse(`${setup.svc.url}/auth/login?return_url=${encodeURIComponent(returnUrl)}`, account);
  const token = browser.cookie(setup.svc.url, 'svc.token');
  if (token === undefined) throw new Error(`no svc.token after the login (landed on ${url}): ${res?.status} ${await res?.text()}`);
  await res?.body?.cancel();
  return { browser, token, landed: url };
}

export async function userInfo(svcUrl: string, token: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${svcUrl}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${token}` } });
  return (await res.json()) as Record<string, unknown>;
}

