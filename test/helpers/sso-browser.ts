/**
 * Just enough browser for an SSO login: a cookie jar per origin (paths ignored), redirects
 * followed by hand, the provider's dev-interaction forms posted (log in as `account`, approve).
 * `fetch` for the provider may differ (its TLS comes from the test CA); svc is plain http.
 */
export class SsoBrowser {
  private readonly jars = new Map<string, Map<string, string>>();

  constructor(private readonly providerFetch: (url: string, init: RequestInit) => Promise<Response>, private readonly providerOrigin: string) {}

  cookie(origin: string, name: string): string | undefined {
    return this.jars.get(origin)?.get(name);
  }

  setCookie(origin: string, name: string, value: string): void {
    this.jar(origin).set(name, value);
  }

  private jar(origin: string): Map<string, string> {
    let jar = this.jars.get(origin);
    if (jar === undefined) this.jars.set(origin, (jar = new Map()));
    return jar;
  }

  /** One request, its cookies kept; no redirect followed. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const origin = new URL(url).origin;
    const jar = this.jar(origin);
    const doFetch = origin === this.providerOrigin ? this.providerFetch : (u: string, i: RequestInit) => fetch(u, i);
    const res = await doFetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(cookie)) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  }

  /** Follows redirects and the provider's forms from `start` until a page that is not a redirect; returns its URL and response. */
  async browse(start: string, account: string, stopAt?: (url: string) => boolean): Promise<{ url: string; res: Response | undefined }> {
    let next: { url: string; form?: URLSearchParams } = { url: start };
    for (let hop = 0; hop < 25; hop++) {
      if (stopAt?.(next.url) === true) return { url: next.url, res: undefined };
      const res = await this.request(next.url, next.form === undefined ? {} : { method: 'POST', body: next.form });
      const location = res.headers.get('location');
      if (location !== null && res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        next = { url: new URL(location, next.url).href };
        continue;
      }
      if (new URL(next.url).origin !== this.providerOrigin) return { url: next.url, res };
      const html = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
      const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
      if (res.status !== 200 || action === undefined || prompt === undefined) throw new Error(`unexpected provider page (${res.status}): ${html.slice(0, 300)}`);
      next = { url: new URL(action, next.url).href, form: new URLSearchParams(prompt === 'login' ? { prompt, login: account, password: 'any' } : { prompt }) };
    }
    throw new Error('no end of redirects after 25 hops');
  }
}
