/**
 * LemonLDAP::NG (llng.ts) as svc's oidc.config provider, as the SSO tests against it start it
 * once per file: a test CA, svc's address chosen first (LemonLDAP::NG is told its callback),
 * an echo backend for the extension `echo`, and the config svc is started with there.
 */
import YAML from 'yaml';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { LLNG_CLIENT_ID, LLNG_CLIENT_SECRET, startLlng, type Llng } from './llng.js';
import { configMap, secret, tempConfigDir } from './manifests.js';
import { freePort } from './peers.js';
import { SECRET_KEY } from './sso-setup.js';
import { makeTestCa, type TestCa } from './test-ca.js';
import { echoExtension } from './test-issuer.js';

export interface LlngSvc {
  readonly ca: TestCa;
  readonly llng: Llng;
  /** Where the test starts svc; LemonLDAP::NG knows its /auth/callback. */
  readonly port: number;
  readonly svcUrl: string;
  /**
   * svc-cm: svc's url; oidc.config for LemonLDAP::NG, its groups from userinfo, the test CA as
   * rootCA unless `rootCA` is false; the extension `echo`; then `extra`.
   */
  svcCm(extra?: Readonly<Record<string, string>>, options?: { readonly rootCA?: boolean }): string;
  /** A fresh config dir: `cm`, the policy, svc-secret with the server key, no admin password, the client secret. */
  configDir(cm: string, policy: string): string;
  /** Stops LemonLDAP::NG and the echo backend. */
  close(): Promise<void>;
}

export async function startLlngSvc(): Promise<LlngSvc> {
  const ca = makeTestCa();
  const port = await freePort();
  const svcUrl = `http://127.0.0.1:${port}`;
  const llng = await startLlng(ca, [`${svcUrl}/auth/callback`]);
  let echo: Backend;
  try {
    echo = await echoBackend('echo');
  } catch (err: unknown) {
    await llng.stop();
    throw err;
  }
  return {
    ca, llng, port, svcUrl,
    svcCm(extra = {}, options = {}) {
      const oidc = {
        name: 'LemonLDAP::NG', issuer: llng.issuer, clientID: LLNG_CLIENT_ID, clientSecret: '$oidc.clientSecret',
        enableUserInfoGroups: true, userInfoPath: '/oauth2/userinfo',
        ...(options.rootCA !== false ? { rootCA: ca.caPem } : {}),
      };
      return configMap('svc-cm', { url: svcUrl, 'oidc.config': YAML.stringify(oidc), 'extension.config': echoExtension(echo.url), ...extra });
    },
    configDir(cm, policy) {
      return tempConfigDir({
        'svc-cm.yaml': cm,
        'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': policy }),
        'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'admin.password': '', 'oidc.clientSecret': LLNG_CLIENT_SECRET }),
      });
    },
    async close() {
      await llng.stop();
      await echo.close();
    },
  };
}
