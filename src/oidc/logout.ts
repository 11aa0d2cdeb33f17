/**
 * Where a browser goes after /auth/logout: the provider's `logoutURL` with `{{token}}` (the ID
 * token) and `{{logoutRedirectURL}}` (svc's base URL with its root path) filled in, each
 * URL-encoded; without one, svc's own `/login`.
 */
export function logoutRedirect(options: { readonly logoutURL: string | undefined; readonly serverUrl: string; readonly idToken: string | undefined }): string {
  const base = options.serverUrl.replace(/\/+$/, '');
  if (options.logoutURL === undefined || options.idToken === undefined) return `${base}/login`;
  return options.logoutURL
    .replaceAll('{{token}}', encodeURIComponent(options.idToken))
    .replaceAll('{{logoutRedirectURL}}', encodeURIComponent(base));
}
