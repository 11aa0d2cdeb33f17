/**
 * The SSO renewal before dispatch (src/http/sso-renewal.ts), alone, on a real node:http server:
 * what it changes is the BeforeDispatch contract of http/entry.ts (the request's svc.token
 * replaced, the new cookie set on the response), and nothing for a request that is not due.
 * The renewer here is what oidc/refresh.ts's SessionRefresh offers, with answers chosen per
 * token (the refresh itself is tested against a real provider in test/e2e/sso-flow.test.ts).
 */
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { pino } from 'pino';
import type { BeforeDispatch } from '../../src/http/entry.js';
import { ssoRenewal, type SessionRenewer } from '../../src/http/sso-renewal.js';

const EXPIRES_AT = 2_000_000_000;

interface Seen {
  readonly pending: boolean;
  readonly cookie: string | undefined;
}

/** A server that runs the renewal as server.ts does, then answers with the Cookie header the request went on with. */
async function serve(before: BeforeDispatch): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const pending = before(req, res);
    const answer = (): void => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ pending: pending !== undefined, cookie: req.headers.cookie } satisfies Seen));
    };
    if (pending === undefined) answer();
    else void pending.then(answer);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function get(url: string, headers: Record<string, string>): Promise<{ seen: Seen; setCookie: readonly string[] }> {
  const req = httpRequest(url, { headers });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { seen: JSON.parse(body) as Seen, setCookie: res.headers['set-cookie'] ?? [] };
}

function renewer(renewals: Record<string, string | 'fails' | 'refused'>, calls: string[] = []): SessionRenewer {
  return {
    due: (token) => token in renewals,
    async renew(token) {
      calls.push(token);
      const next = renewals[token];
      if (next === 'fails') throw new Error('provider down');
      if (next === 'refused' || next === undefined) return undefined;
      return { idToken: next, expiresAt: EXPIRES_AT };
    },
  };
}

describe('http/sso-renewal: the session renewal before dispatch', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  async function start(refresh: SessionRenewer, configuredUrl = 'http://svc.example.com', warnings: string[] = []): Promise<string> {
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const served = await serve(ssoRenewal(refresh, log, () => configuredUrl));
    server = served.server;
    return served.url;
  }

  it('replaces a due svc.token in the request and sets the new one on the response, keeping the other cookies', async () => {
    const url = await start(renewer({ old: 'new' }));
    const { seen, setCookie } = await get(url, { cookie: 'a=1; svc.token=old; b=2' });
    expect(seen.pending).to.equal(true);
    expect(seen.cookie).to.equal('a=1; b=2; svc.token=new');
    expect(setCookie).to.have.length(1);
    expect(setCookie[0]).to.match(/^svc\.token=new; path=\/; expires=.*; samesite=lax; httponly$/);
    expect(setCookie[0]).to.contain(new Date(EXPIRES_AT * 1000).toUTCString());
  });

  it('marks the renewed cookie secure when the configured url is https', async () => {
    const url = await start(renewer({ old: 'new' }), 'https://svc.example.com');
    const { setCookie } = await get(url, { cookie: 'svc.token=old' });
    expect(setCookie[0]).to.match(/; secure; httponly$/);
  });

  it('returns nothing to wait for when no cookie is due, a bearer token included', async () => {
    const calls: string[] = [];
    const url = await start(renewer({ old: 'new' }, calls));
    for (const headers of [{}, { cookie: 'svc.token=fresh' }, { authorization: 'Bearer old' }, { authorization: 'Bearer old', cookie: 'svc.token=old' }]) {
      const { seen, setCookie } = await get(url, headers);
      expect(seen.pending, JSON.stringify(headers)).to.equal(false);
      expect(setCookie).to.deep.equal([]);
    }
    expect(calls, 'a bearer token is the client\'s to renew').to.deep.equal([]);
  });

  it('lets the request go on with its own token when the renewal fails or is refused, warning on a failure', async () => {
    const warnings: string[] = [];
    const url = await start(renewer({ down: 'fails', gone: 'refused' }), 'http://svc.example.com', warnings);
    const failed = await get(url, { cookie: 'svc.token=down' });
    expect(failed.seen).to.deep.equal({ pending: true, cookie: 'svc.token=down' });
    expect(failed.setCookie).to.deep.equal([]);
    expect(warnings.join('')).to.contain('an SSO session could not be renewed now');
    const refused = await get(url, { cookie: 'svc.token=gone' });
    expect(refused.seen).to.deep.equal({ pending: true, cookie: 'svc.token=gone' });
    expect(refused.setCookie).to.deep.equal([]);
  });
});
