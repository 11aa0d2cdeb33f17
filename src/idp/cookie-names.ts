/**
 * The names of the identity provider's cookies, given to oidc-provider as its `cookies.names`
 * (provider.ts), so that this list is the provider's configuration and not a copy of it. The
 * extension proxy refuses a backend's Set-Cookie for any of them, and for their variants
 * (`_session.sig`, the signature koa's cookies add; `_session.legacy` of older releases): a
 * backend on svc's origin must not plant or replace the provider's session or interaction.
 * Kept apart from provider.ts so that the proxy does not load oidc-provider.
 */
export const PROVIDER_COOKIE_NAMES = {
  session: '_session',
  interaction: '_interaction',
  resume: '_interaction_resume',
} as const;
