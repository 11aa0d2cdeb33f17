/**
 * The HTTP pieces the GitHub and GitLab connectors share, with a scripted fetch: Link rel="next"
 * parsing, the page bound, a next page on another origin refused before the token goes there,
 * the body bound, and the token endpoint's error answers (GitHub's with HTTP 200).
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { getAll, MAX_BODY_BYTES, MAX_PAGES, tokenGrant, type Upstream } from '../../../connectors/oauth2/http.js';
import { nextLink } from '../../../connectors/oauth2/link.js';

const API = 'https://api.example.test';

function upstream(answer: (url: string, init?: RequestInit) => Response): { up: Upstream; seen: { url: string; auth?: string }[]; logs: string[] } {
  const seen: { url: string; auth?: string }[] = [];
  const logs: string[] = [];
  const fetch = ((input: string, init?: RequestInit) => {
    const auth = new Headers(init?.headers).get('authorization') ?? undefined;
    seen.push(auth === undefined ? { url: String(input) } : { url: String(input), auth });
    return Promise.resolve(answer(String(input), init));
  }) as typeof globalThis.fetch;
  return { up: { fetch, log: pino({}, { write: (l: string) => void logs.push(l) }), name: 'test' }, seen, logs };
}

const signal = (): AbortSignal => AbortSignal.timeout(5_000);

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err: unknown) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

describe('connectors/oauth2', () => {
  describe('nextLink', () => {
    it('reads rel="next" among other relations, resolved against the request URL', () => {
      const header = '<https://api.github.com/user/teams?page=3>; rel="next", <https://api.github.com/user/teams?page=9>; rel="last"';
      expect(nextLink(header, `${API}/x`)).to.equal('https://api.github.com/user/teams?page=3');
      expect(nextLink('</user/teams?page=2>; rel="prev first"', `${API}/x`)).to.equal(undefined);
      expect(nextLink('</user/teams?page=2>; rel=next', `${API}/user/teams`)).to.equal(`${API}/user/teams?page=2`);
      expect(nextLink(null, API)).to.equal(undefined);
      expect(nextLink('garbage', API)).to.equal(undefined);
    });
  });

  describe('getAll', () => {
    it('follows every page with the token, in order', async () => {
      const { up, seen } = upstream((url) => {
        const page = Number(new URL(url).searchParams.get('page') ?? '1');
        return Response.json([page * 10, page * 10 + 1], { headers: page < 3 ? { link: `<${API}/items?page=${page + 1}>; rel="next"` } : {} });
      });
      expect(await getAll(up, 'GET /items', `${API}/items`, 'tok', signal())).to.deep.equal([10, 11, 20, 21, 30, 31]);
      expect(seen.map((s) => s.auth)).to.deep.equal(['Bearer tok', 'Bearer tok', 'Bearer tok']);
    });

    it(`stops at ${MAX_PAGES} pages and refuses the partial list`, async () => {
      const { up, seen, logs } = upstream((url) => Response.json([1], { headers: { link: `<${url}x>; rel="next"` } }));
      const err = await failure(getAll(up, 'GET /items', `${API}/items`, 'tok', signal()));
      expect(err.message).to.match(/could not complete the login/);
      expect(seen).to.have.length(MAX_PAGES);
      expect(logs.join('')).to.contain(`more than ${MAX_PAGES} pages`);
    });

    it('never sends the token to a next page on another origin', async () => {
      const { up, seen } = upstream(() => Response.json([1], { headers: { link: '<https://evil.example.test/steal>; rel="next"' } }));
      await failure(getAll(up, 'GET /items', `${API}/items`, 'tok', signal()));
      expect(seen.map((s) => s.url)).to.deep.equal([`${API}/items`]);
    });

    it('refuses an answer past the body bound, and one that is not a list', async () => {
      const big = upstream(() => new Response(`[${'1,'.repeat(MAX_BODY_BYTES / 2)}1]`));
      expect((await failure(getAll(big.up, 'GET /items', `${API}/items`, 'tok', signal()))).message).to.match(/could not complete the login/);
      const notList = upstream(() => Response.json({ message: 'hi' }));
      expect((await failure(getAll(notList.up, 'GET /items', `${API}/items`, 'tok', signal()))).message).to.match(/could not complete the login/);
    });

    it('a 5xx or 429 is unavailable; a 401 is a rejected token', async () => {
      for (const status of [500, 502, 429]) {
        const { up } = upstream(() => new Response('oops', { status }));
        expect((await failure(getAll(up, 'GET /items', `${API}/items`, 'tok', signal()))).message, String(status)).to.match(/unreachable/);
      }
      const { up } = upstream(() => new Response('{}', { status: 401 }));
      expect((await failure(getAll(up, 'GET /items', `${API}/items`, 'tok', signal()))).name).to.equal('TokenRejected');
    });
  });

  describe('tokenGrant', () => {
    it('reads tokens, and the OAuth error whether it comes with 200 (GitHub) or 400/401 (RFC 6749)', async () => {
      const ok = upstream(() => Response.json({ access_token: 'at', refresh_token: 'rt', token_type: 'bearer' }));
      expect(await tokenGrant(ok.up, `${API}/token`, new URLSearchParams({ code: 'c' }), signal())).to.deep.equal({ ok: true, tokens: { accessToken: 'at', refreshToken: 'rt' } });
      const github = upstream(() => Response.json({ error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' }));
      expect(await tokenGrant(github.up, `${API}/token`, new URLSearchParams(), signal())).to.deep.include({ ok: false, error: 'bad_verification_code' });
      const rfc = upstream(() => Response.json({ error: 'invalid_client' }, { status: 401 }));
      expect(await tokenGrant(rfc.up, `${API}/token`, new URLSearchParams(), signal())).to.deep.include({ ok: false, error: 'invalid_client' });
      const down = upstream(() => new Response('bad gateway', { status: 502 }));
      expect((await failure(tokenGrant(down.up, `${API}/token`, new URLSearchParams(), signal()))).message).to.match(/unreachable/);
    });
  });
});
