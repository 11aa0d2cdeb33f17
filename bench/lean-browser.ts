/**
 * The form browser of the tests over undici's request() on keep-alive pools instead of fetch,
 * and a fetch for openid-client on the same pools: the load generator shares the two cores with
 * the servers it measures, and fetch's web streams cost it ~5 ms of CPU per login here, most
 * of a core at svc's rate. Both servers are driven by this same client, so the comparison holds.
 */
import { Agent, fetch as undiciFetch, request } from 'undici';
import type { CustomFetch } from 'openid-client';
import { FormBrowser, type Answer } from '../test/helpers/form-browser.js';

/** Keep-alive connections for every origin the bench talks to; closed by closeLeanAgent(). */
const agent = new Agent({ connections: 64 });

export class LeanBrowser extends FormBrowser {
  protected override async exchange(url: string, form?: URLSearchParams): Promise<Answer> {
    const res = await request(url, {
      dispatcher: agent,
      method: form === undefined ? 'GET' : 'POST',
      headers: {
        cookie: this.cookieHeader(),
        ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      ...(form === undefined ? {} : { body: form.toString() }),
    });
    const setCookie = res.headers['set-cookie'];
    this.keepCookies(setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie]);
    const location = res.headers['location'];
    return {
      status: res.statusCode,
      location: typeof location === 'string' ? location : null,
      text: () => res.body.text(),
      discard: () => res.body.dump(),
    };
  }
}

/** undici's own fetch on the same agent, for openid-client's customFetch. */
export const leanFetch: CustomFetch = (url, options) =>
  undiciFetch(url, { ...(options as Parameters<typeof undiciFetch>[1]), dispatcher: agent }) as unknown as Promise<Response>;

export function closeLeanAgent(): Promise<void> {
  return agent.close();
}
