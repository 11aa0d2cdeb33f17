/**
 * The connector the factory returns: it warns about insecure switches once, at start, and
 * loads ./ldap.ts (and with it ldapts) on the first login, so parsing and `svc-server validate`
 * never load the LDAP library.
 */
import type { ConnectorDeps, Identity, LoginContext, PasswordConnector } from '../connector.js';
import type { LdapConfig } from './config.js';
import type { LdapConnector } from './ldap.js';

export class LazyLdapConnector implements PasswordConnector {
  readonly kind = 'password';
  readonly prompt: string;
  private loaded: Promise<LdapConnector> | undefined;

  constructor(
    private readonly config: LdapConfig,
    private readonly deps: ConnectorDeps,
  ) {
    this.prompt = config.usernamePrompt;
    if (config.transport === 'plain') deps.log.warn('ldap: insecureNoSSL: passwords cross the network in clear text');
    if (config.insecureSkipVerify) deps.log.warn('ldap: insecureSkipVerify: the directory\'s certificate is not checked');
    if (config.legacyGroupMatcher) deps.log.warn('ldap: groupSearch.userAttr/groupAttr are deprecated (as in Dex): use groupSearch.userMatchers');
  }

  async login(username: string, password: string, ctx: LoginContext): Promise<Identity | null> {
    return (await this.connector()).login(username, password, ctx);
  }

  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    return (await this.connector()).refresh(identity, ctx);
  }

  /** Closes the pooled connections; a login still under way closes its own when it ends. */
  async close(): Promise<void> {
    await (await this.loaded?.catch(() => undefined))?.close();
  }

  private connector(): Promise<LdapConnector> {
    this.loaded ??= import('./ldap.js').then(
      ({ LdapConnector }) => new LdapConnector(this.config, this.deps),
      (err: unknown) => {
        // Try again at the next login rather than keep a failed load for good.
        this.loaded = undefined;
        throw err;
      },
    );
    return this.loaded;
  }
}
