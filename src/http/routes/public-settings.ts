/** The settings anyone may read: no secret, no password, no key. Pure, so it is unit-tested alone. */
import type { AccountSettings } from '../../accounts/config.js';
import type { OidcConfig } from '../../oidc/config.js';
import { ssoInForce } from '../../oidc/in-force.js';

/** The settings this view reads. */
export interface PublicSettingsSource {
  readonly url: string;
  readonly oidc: OidcConfig | undefined;
  /** What it reads of idp.config, named here so the HTTP edge needs nothing from src/idp. */
  readonly idp: { readonly connectors: readonly { readonly id: string; readonly name: string; readonly type: string }[] } | undefined;
  readonly accounts: ReadonlyMap<string, AccountSettings>;
}

export interface PublicSettings {
  readonly url: string;
  readonly oidcConfig?: {
    readonly name: string;
    readonly issuer: string;
    readonly clientID: string;
    readonly cliClientID?: string;
    readonly scopes: readonly string[];
  };
  readonly idpConnectors: readonly { readonly id: string; readonly name: string; readonly type: string }[];
  readonly userLoginsDisabled: boolean;
}

export function publicSettings(settings: PublicSettingsSource): PublicSettings {
  const oidc = settings.oidc;
  const userLoginsDisabled = ![...settings.accounts.values()].some((a) => a.enabled && a.capabilities.includes('login'));
  return {
    url: settings.url,
    ...(oidc !== undefined
      ? {
          oidcConfig: {
            name: oidc.name,
            issuer: oidc.issuer,
            clientID: oidc.clientID,
            ...(oidc.cliClientID !== undefined ? { cliClientID: oidc.cliClientID } : {}),
            scopes: oidc.requestedScopes,
          },
        }
      : {}),
    // Only the single sign-on in force: with oidc.config set, the bundled provider is off.
    idpConnectors: (ssoInForce(settings) === 'idp' ? (settings.idp?.connectors ?? []) : []).map((c) => ({ id: c.id, name: c.name, type: c.type })),
    userLoginsDisabled,
  };
}
