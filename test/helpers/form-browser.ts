/**
 * Just enough browser for the identity provider's pages, without JavaScript: a cookie jar
 * (paths ignored), redirects followed by hand until one leaves for `stopAt`, and forms read
 * from the HTML and posted as a person would fill them. A page that posts itself on to its own
 * origin (`data-auto-post`, svc's script does it) is followed as a browser with scripts would;
 * one posting to another origin is returned, for the test to look at. Requests go through fetch; a load
 * generator that must spend less CPU per request overrides `exchange` (bench/lean-browser.ts).
 */
export interface Page {
  readonly url: string;
  readonly status: number;
  readonly html: string;
}

/** What the browser reads of one answer: its status, redirect and body. */
export interface Answer {
  readonly status: number;
  readonly location: string | null;
  text(): Promise<string>;
  /** Reads the body to its end without keeping it (a redirect's). */
  discard(): Promise<void>;
}

export class FormBrowser {
  readonly #jar = new Map<string, string>();
  /** The name of every cookie any response set, deleted ones included. */
  readonly cookieNamesSet = new Set<string>();

  /** `fetchImpl`: another fetch, for a browser that trusts a test CA (an HTTPS upstream stand-in). */
  constructor(private readonly fetchImpl: typeof globalThis.fetch = globalThis.fetch) {}

  /** One request with the jar's cookies, its Set-Cookies kept; no redirect followed. */
  async request(url: string, form?: URLSearchParams): Promise<Response> {
    const res = await this.fetchImpl(url, {
      redirect: 'manual',
      headers: { cookie: this.cookieHeader() },
      ...(form === undefined ? {} : { method: 'POST', body: form }),
    });
    this.keepCookies(res.headers.getSetCookie());
    return res;
  }

  /** The exchange `go` makes at each hop. */
  protected async exchange(url: string, form?: URLSearchParams): Promise<Answer> {
    const res = await this.request(url, form);
    return {
      status: res.status,
      location: res.headers.get('location'),
      text: () => res.text(),
      discard: async () => {
        await res.arrayBuffer();
      },
    };
  }

  protected cookieHeader(): string {
    return [...this.#jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  protected keepCookies(setCookies: readonly string[]): void {
    for (const cookie of setCookies) {
      const [pair = ''] = cookie.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      this.cookieNamesSet.add(name.trim());
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(cookie)) this.#jar.delete(name); else this.#jar.set(name, value);
    }
  }

  /** Follows redirects from `url`; returns the redirect to `stopAt`, or the page reached. */
  async go(url: string, stopAt: string, form?: URLSearchParams): Promise<URL | Page> {
    let next: { url: string; form?: URLSearchParams } = form === undefined ? { url } : { url, form };
    for (let hop = 0; hop < 20; hop++) {
      const res = await this.exchange(next.url, next.form);
      const location = res.location;
      if (location === null) {
        const page = { url: next.url, status: res.status, html: await res.text() };
        const onward = sameOriginAutoPost(page);
        if (onward === undefined) return page;
        next = onward;
        continue;
      }
      await res.discard();
      const target = new URL(location, next.url);
      if (target.href.startsWith(stopAt)) return target;
      next = { url: target.href };
    }
    throw new Error('more than 20 redirects');
  }

  /** Submits the page's first form with `fields` over its hidden inputs. */
  submit(page: Page, fields: Record<string, string>, stopAt: string, formIndex = 0): Promise<URL | Page> {
    const { url, form } = formOf(page, fields, formIndex);
    return this.go(url, stopAt, form);
  }
}

function formOf(page: Page, fields: Record<string, string>, formIndex = 0): { url: string; form: URLSearchParams } {
  const forms = [...page.html.matchAll(/<form[^>]*>[\s\S]*?<\/form>/g)].map((m) => m[0]);
  const form = forms[formIndex];
  if (form === undefined) throw new Error(`no form on the page (${page.status}): ${page.html.slice(0, 400)}`);
  const action = /action="([^"]*)"/.exec(form)?.[1] ?? page.url;
  const body = new URLSearchParams();
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) body.set(m[1] as string, unescape(m[2] as string));
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  return { url: new URL(unescape(action), page.url).href, form: body };
}

/** The POST a `data-auto-post` page makes to its own origin, if it is one. */
function sameOriginAutoPost(page: Page): { url: string; form: URLSearchParams } | undefined {
  if (!/<form[^>]*data-auto-post/.test(page.html)) return undefined;
  const onward = formOf(page, {});
  return new URL(onward.url).origin === new URL(page.url).origin ? onward : undefined;
}

function unescape(value: string): string {
  return value.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

export function isPage(value: URL | Page): value is Page {
  return !(value instanceof URL);
}
