/**
 * Where the bundled provider lives: mounted at `/api/idp`, so its issuer is `<url>/api/idp`. Apart
 * from provider.ts so that code naming the issuer (the SSO client side, the CLI) does not load
 * oidc-provider, which prints a runtime warning on Node 20 when imported.
 */
export const MOUNT_PATH = '/api/idp';

export const issuerOf = (url: string): string => `${url}${MOUNT_PATH}`;
