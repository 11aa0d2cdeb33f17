/**
 * Every route of the assembled app, walked: each answer agrees with the route's declaration
 * (src/http/route-access.ts), whatever the spelling of the path, the method, or an Upgrade
 * header. Three callers: anonymous, a session confined to enrolment (users.mfa.required, no
 * factor yet) and a caller with its full rights (an API token).
 *
 * What the test expects of a request is decided here, from the declarations alone: the routes
 * whose pattern matches the path as sent (case-sensitive, a trailing slash ignored), first
 * registered first, as the router runs them. A refused caller never gets anything but the
 * refusal its declaration names, or "no route". Requests that an admitted caller could use to
 * change something are not sent (the walk must not log itself out).
 *
 * Also checks docs/routes.md against the declarations (SVC_WRITE_ROUTES_DOC=1 writes it).
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { match } from 'path-to-regexp';
import YAML from 'yaml';
import type { DeclaredRoute, Who } from '../../src/http/route-access.js';
import { renderRouteList } from '../../src/http/route-list.js';
import { accountsConfigDir, call, editConfigMap, login, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ROUTES_DOC = join(import.meta.dirname, '..', '..', 'docs', 'routes.md');
const OTHER_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

type Caller = 'anonymous' | 'confined' | 'full';

interface Answer {
  readonly status: number;
  readonly error: string | undefined;
  readonly message: string | undefined;
}

/** One request with node:http (fetch refuses Upgrade and Connection headers). */
function send(base: string, method: string, path: string, token: string | undefined, upgrade: boolean): Promise<Answer> {
  const { hostname, port } = new URL(base);
  const headers: Record<string, string> = {};
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  if (upgrade) Object.assign(headers, { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' });
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let body: { error?: string; message?: string } = {};
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
        } catch {
          // a page, or no body (HEAD)
        }
        resolve({ status: res.statusCode ?? 0, error: body.error, message: body.message });
      });
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, error: undefined, message: undefined });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A concrete path for a pattern: each parameter filled with a value no fixture uses. */
function concrete(pattern: string): string {
  return pattern.replace(/:(\w+)/g, 'walk-$1');
}

/** The spellings of one path that a gate reading the path instead of the match would misjudge. */
function spellings(path: string): readonly string[] {
  const [, first = '', ...rest] = path.split('/');
  const tail = rest.length > 0 ? `/${rest.join('/')}` : '';
  const out = [path, `${path}/`, path.toUpperCase(), `//${path.slice(1)}`, `${path}//`];
  if (first !== '') {
    out.push(`/${first.toUpperCase()}${tail}`, `/%${first.charCodeAt(0).toString(16)}${first.slice(1)}${tail}`);
    if (rest.length > 0) out.push(`/${first}%2F${rest.join('/')}`, `/${first}/.${tail}`, `/${first}/x/..${tail}`);
  }
  return [...new Set(out)];
}

function admits(who: Who, caller: Caller): boolean {
  if (who === 'anyone') return true;
  if (caller === 'anonymous') return false;
  return who === 'enrolment' || caller === 'full';
}

describe('the route walk: every route answers as it declares', function () {
  this.timeout(180_000);
  let dir: string;
  let server: TestServer;
  const tokens: Partial<Record<Caller, string>> = {};
  const matchers: { route: DeclaredRoute; test: (path: string) => boolean }[] = [];

  before(async function () {
    dir = accountsConfigDir({
      cm: {
        url: 'http://127.0.0.1',
        'users.mfa.required': 'false',
        'oidc.config': 'name: Corp\nissuer: https://idp.example.com\nclientID: svc\nclientSecret: $oidc.clientSecret\ncliClientID: svc-cli\n',
        'extension.config': YAML.stringify({ extensions: [{ name: 'echo', enabled: true, backend: { services: [{ url: 'http://127.0.0.1:9' }] } }] }),
      },
      secret: { 'oidc.clientSecret': 'walk-client-secret' },
    });
    server = await startTestServer(dir);
    // The full caller: an API token, never confined (made before the switch, as a confined session cannot make one).
    const alice = await login(server.url, 'alice', PASSWORDS.alice);
    const made = await call(server.url, 'POST', '/api/v1/account/alice/token', { token: alice, body: {} });
    expect(made.status).to.equal(200);
    tokens.full = String(made.body['token']);
    editConfigMap(dir, (text) => text.replace("users.mfa.required: 'false'", "users.mfa.required: 'true'").replace('users.mfa.required: "false"', 'users.mfa.required: "true"'));
    tokens.confined = await login(server.url, 'admin', PASSWORDS.admin);
    await waitFor(async () => (await call(server.url, 'GET', '/api/v1/account', { token: String(tokens.confined) })).status === 403, 'users.mfa.required in force');
    for (const route of server.routes) {
      const test = match(route.path, { sensitive: true, trailing: true, end: true, decode: false });
      matchers.push({ route, test: (path) => test(path) !== false });
    }
  });
  after(async function () {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives every route of the app a declaration', function () {
    const undeclared = server.routes.filter((route) => route.access === undefined).map((route) => `${route.methods.join(',')} ${route.path}`);
    expect(undeclared).to.deep.equal([]);
    expect(server.routes.length).to.be.above(30);
  });

  it('keeps docs/routes.md as the declarations say', function () {
    const expected = renderRouteList(server.routes);
    if (process.env['SVC_WRITE_ROUTES_DOC'] === '1') writeFileSync(ROUTES_DOC, expected);
    expect(readFileSync(ROUTES_DOC, 'utf8'), 'docs/routes.md is out of date: SVC_WRITE_ROUTES_DOC=1 npx mocha test/e2e/route-walk.test.ts').to.equal(expected);
  });

  it('answers each caller, spelling, method and Upgrade as the matched route declares', async function () {
    const disagreements: string[] = [];
    let sent = 0;
    for (const { route } of matchers) {
      const path = concrete(route.path);
      const requests = new Map<string, { method: string; path: string; upgrade: boolean }>();
      for (const method of route.methods) for (const spelled of spellings(path)) requests.set(`${method} ${spelled}`, { method, path: spelled, upgrade: false });
      for (const method of OTHER_METHODS) {
        requests.set(`${method} ${path}`, { method, path, upgrade: false });
        requests.set(`${method} ${path} +upgrade`, { method, path, upgrade: true });
      }
      for (const caller of ['anonymous', 'confined', 'full'] as const) {
        for (const [label, req] of requests) {
          const pathOnly = req.path.split('?')[0] ?? req.path;
          const runs = matchers.find((m) => m.route.methods.includes(req.method) && m.test(pathOnly))?.route;
          const admitted = runs?.access !== undefined && admits(runs.access.who, caller);
          // An admitted caller's request that could change something is not sent.
          if (admitted && !SAFE.has(req.method)) continue;
          const answer = await send(server.url, req.method, req.path, tokens[caller], req.upgrade);
          sent++;
          const problem = disagreement(answer, runs, admitted, caller, req.method);
          if (problem !== undefined) disagreements.push(`${caller} ${label}: ${problem} (got ${answer.status} ${answer.error ?? ''})`);
        }
      }
    }
    // A refusal not given first: those are what a gate that decides on the wrong thing lets through.
    const shown = [...disagreements.filter((d) => d.includes('not refused')), ...disagreements.filter((d) => !d.includes('not refused'))].slice(0, 15);
    expect(disagreements.length, `${disagreements.length} answers disagree with their declaration, among them:\n${shown.join('\n')}`).to.equal(0);
    expect(sent).to.be.above(1000);
  });

  it('still holds both sessions: the walk logged nobody out', async function () {
    for (const caller of ['confined', 'full'] as const) {
      const answer = await send(server.url, 'GET', '/api/v1/session/userinfo', tokens[caller], false);
      expect(answer.status).to.equal(200);
    }
  });
});

/** The gate's own refusals (route-access.ts): without a token, and to a confined session. HEAD answers carry no body. */
const GATE_401 = 'no valid token: log in or send a bearer token';
const isGate401 = (a: Answer, method: string) => a.status === 401 && (method === 'HEAD' || a.message === GATE_401);
const isGate403 = (a: Answer, method: string) => a.status === 403 && (method === 'HEAD' || a.error === 'second_factor_enrolment_required');

/** Why an answer disagrees with the declaration of the route that runs, or undefined when it agrees. */
function disagreement(answer: Answer, runs: DeclaredRoute | undefined, admitted: boolean, caller: Caller, method: string): string | undefined {
  const { status } = answer;
  if (runs === undefined) {
    // No route: nothing is served. OPTIONS lists the methods of a path that has some (empty body).
    if (method === 'OPTIONS' && (status === 200 || status === 204)) return undefined;
    return [400, 404, 405, 501].includes(status) ? undefined : 'served a request no route declares';
  }
  if (!admitted) {
    if (caller === 'anonymous') return isGate401(answer, method) ? undefined : 'not refused 401 without a token';
    return isGate403(answer, method) ? undefined : 'not refused 403 second_factor_enrolment_required to a confined session';
  }
  // Admitted: whatever the route answers (an upstream that is not there is a 503), never the gate's refusal.
  if (status === 500) return 'a server error';
  // A HEAD answer has no body to tell the gate's refusal from the route's own: its GET is checked.
  if (method !== 'HEAD' && (isGate401(answer, method) || isGate403(answer, method))) return 'refused a caller its declaration admits';
  return undefined;
}
