/**
 * Where a login may send the browser back to: a path on svc, or an absolute URL on svc's own
 * `url` (same scheme, host and port, under its path). Anything else is `/`: no open redirect.
 * One rule for the server (src/oidc/return-url.ts re-exports it) and for the login page's script,
 * which imports it from here: a page that went by a looser copy of its own let `//host`,
 * `/.//host/x` and `/a/..//host/y` through (issue 21). No DOM and no Node here, so both builds take it.
 */
export function safeReturnUrl(raw: string | undefined, serverUrl: string): string {
  // Control characters (a tab, a newline) are dropped by URL parsers, so `/\t/host` would become
  // `//host`; a backslash is read as a slash. Neither has a place in a return URL.
  // eslint-disable-next-line no-control-regex
  if (raw === undefined || raw === '' || /[\u0000-\u001f\u007f\\]/.test(raw)) return '/';
  // A path, but not `//host` (a scheme-relative URL to another site), and only in its normal form:
  // `/./` or `/../` would let a browser resolve it to `//host`.
  if (raw.startsWith('/') && !raw.startsWith('//')) {
    const base = 'http://svc.invalid';
    return URL.canParse(raw, base) && new URL(raw, base).pathname === raw.split(/[?#]/)[0] ? raw : '/';
  }
  if (!URL.canParse(raw)) return '/';
  const target = new URL(raw);
  const base = new URL(serverUrl);
  const basePath = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  if (target.protocol !== base.protocol || target.host !== base.host || target.username !== '' || target.password !== '') return '/';
  if (!`${target.pathname}/`.startsWith(basePath) && target.pathname !== base.pathname) return '/';
  return target.href;
}
