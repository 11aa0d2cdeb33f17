/**
 * Which single sign-on is in force: with both `oidc.config` and `idp.config` set, the external
 * provider is (as Argo CD prefers oidc.config over dex.config); the bundled one then stays off.
 */
export type SsoInForce = 'oidc' | 'idp' | undefined;

export function ssoInForce(settings: { readonly oidc: unknown; readonly idp: unknown }): SsoInForce {
  if (settings.oidc !== undefined) return 'oidc';
  return settings.idp !== undefined ? 'idp' : undefined;
}

export function describeSsoInForce(settings: { readonly oidc: unknown; readonly idp: unknown }): string {
  switch (ssoInForce(settings)) {
    case 'oidc':
      return settings.idp !== undefined
        ? 'single sign-on: the external OIDC provider (oidc.config) is in force; idp.config is also set and is not used'
        : 'single sign-on: the external OIDC provider (oidc.config)';
    case 'idp':
      return 'single sign-on: the bundled identity provider (idp.config)';
    default:
      return 'single sign-on: none configured';
  }
}
