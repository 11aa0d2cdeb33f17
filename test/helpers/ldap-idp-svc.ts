/**
 * svc with the bundled provider's LDAP connector `corp` on a real slapd (ldap-directory.ts), in
 * front of one echo backend (idp-svc.ts), as the SSO tests of directory users start it; and an
 * SSO login of such a user through /auth/login and the provider's password form.
 */
import { FormBrowser, isPage } from './form-browser.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc, type IdpSvcOptions } from './idp-svc.js';
import { corpLdapConnector, LDAP_BIND_SECRETS, startLdapDirectory } from './ldap-directory.js';

export interface LdapIdpConfig {
  /** svc-secret's server.secretkey. */
  readonly secretKey: string;
  /** Extensions by name; the first names the echo backend. */
  readonly extensions: readonly string[];
  readonly policy: string;
  /** Further svc-cm keys (users.sso.groupsRecheck, ...). */
  readonly cm?: Record<string, string>;
}

export interface LdapIdpSvc extends IdpSvc {
  /** slapd's port, to change the directory as its admin (connectors/ldap/directory-admin.ts). */
  readonly ldapPort: number;
  /** Stops slapd while svc runs (a directory outage); close() does not mind. */
  stopDirectory(): Promise<void>;
}

/** close() stops svc, its backend and config dir, then slapd; a failed start stops slapd too. */
export async function startLdapIdpSvc(config: LdapIdpConfig, options: IdpSvcOptions = {}): Promise<LdapIdpSvc> {
  const directory = await startLdapDirectory();
  try {
    const svc = await startIdpSvc(await idpSvcAddress(), {
      connectors: [corpLdapConnector(directory)], extensions: config.extensions, policy: config.policy,
      secrets: { 'server.secretkey': config.secretKey, ...LDAP_BIND_SECRETS },
      ...(config.cm !== undefined ? { cm: config.cm } : {}),
    }, options);
    return {
      ...svc,
      ldapPort: directory.port,
      stopDirectory: () => directory.stop(),
      async close() {
        await svc.close();
        await directory.stop();
      },
    };
  } catch (err: unknown) {
    await directory.stop();
    throw err;
  }
}

/** The password form's browser, which can also read the svc.token cookie it holds. */
export class SvcTokenBrowser extends FormBrowser {
  /** The svc.token cookie; '' when it holds none (a session ended). */
  token(): string {
    return /(?:^|; )svc\.token=([^;]+)/.exec(this.cookieHeader())?.[1] ?? '';
  }
}

/** An SSO session at svc on `url`: /auth/login?return_url=/apps, the provider's password form, back on /apps. */
export async function ssoFormLogin(url: string, username: string, password: string): Promise<SvcTokenBrowser> {
  const browser = new SvcTokenBrowser();
  const form = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
  if (!isPage(form)) throw new Error(`expected the password form, got a redirect to ${form.href}`);
  const landed = await browser.submit(form, { username, password }, `${url}/apps`);
  if (isPage(landed)) throw new Error(`login of ${username} failed: ${landed.html.slice(0, 300)}`);
  return browser;
}
