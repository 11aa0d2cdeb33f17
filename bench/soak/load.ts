/**
 * The soak's mixed load: one paced loop per kind of request, each at its own rate, held below
 * saturation (a loop never runs two of its requests at once, so a slow answer lowers the rate
 * instead of piling up). Every request's outcome is recorded with its time, so that failures can
 * be set against the faults' windows. What the invariants need afterwards (tokens created,
 * deleted, logged out) is kept too.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as client from 'openid-client';
import { WebSocket } from 'ws';
import { webClientSecret } from '../../src/idp/clients.js';
import { innermostCause } from '../../src/lib/error-cause.js';
import { describeFailure } from '../../src/lib/tls-fetch.js';
import { authorizationRequest, svcWebClient } from '../../test/helpers/authorization.js';
import { FormBrowser, isPage } from '../../test/helpers/form-browser.js';
import { PASSWORDS, SECRET_KEY, SSO_USER, type Rig } from './rig.js';

export type Kind =
  | 'local-login' | 'logout' | 'api-request' | 'sso-login' | 'refresh' | 'proxy-plain' | 'proxy-upload'
  | 'proxy-stream' | 'websocket' | 'token-create' | 'token-delete' | 'config-edit';

export interface Outcome {
  readonly at: number;
  readonly kind: Kind;
  readonly ok: boolean;
  /** The status, or what went wrong (for the report). */
  readonly detail: string;
}

/** Requests per second of each kind; the WebSocket is held open and sends one message a second. */
export const RATES: Readonly<Record<Kind, number>> = {
  'local-login': 2, logout: 1, 'api-request': 5, 'sso-login': 1, refresh: 4, 'proxy-plain': 10, 'proxy-upload': 0.2,
  'proxy-stream': 1, websocket: 1, 'token-create': 0.5, 'token-delete': 0.5, 'config-edit': 1 / 20,
};

const UPLOAD = Buffer.alloc(10 << 20, 'u');
const STREAM_BYTES = 20 * 4096;
const TIMEOUT_MS = 15_000;
/** API tokens kept live; the per-account cap (100 by default) is far above. */
const LIVE_TOKENS = 20;
const BASIC = `Basic ${Buffer.from(`svc:${encodeURIComponent(webClientSecret(SECRET_KEY))}`).toString('base64')}`;

export interface Ledger {
  readonly outcomes: Outcome[];
  /** API tokens answered as created and not deleted: id -> token. */
  readonly liveTokens: Map<string, string>;
  /** API tokens answered as deleted. */
  readonly deletedTokens: Map<string, string>;
  /** Session tokens answered as logged out. */
  readonly loggedOut: string[];
}

export interface Load {
  readonly ledger: Ledger;
  stop(): Promise<void>;
}

interface Json {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function api(base: string, method: string, path: string, token?: string, body?: unknown): Promise<Json> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // an HTML or empty answer: the status says enough
  }
  return { status: res.status, body: parsed };
}

/** What one request of a kind does: resolves with its detail when it worked, rejects when it did not. */
type Step = () => Promise<string>;

export function startLoad(rig: Rig, configEdit: () => Promise<string>): Load {
  const ledger: Ledger = { outcomes: [], liveTokens: new Map(), deletedTokens: new Map(), loggedOut: [] };
  const sessions: string[] = [];
  const chains: string[] = [];
  let admin: string | undefined;
  let running = true;
  const base = rig.url;
  let tokenSeq = 0;
  let rp: client.Configuration | undefined;

  const expect = (reply: Json, status: number, what: string): Json => {
    if (reply.status !== status) throw new Error(`${what}: ${reply.status} ${String(reply.body['error'] ?? '')} ${String(reply.body['message'] ?? '')}`.trim());
    return reply;
  };
  const login = async (username: string, password: string): Promise<string> =>
    String(expect(await api(base, 'POST', '/api/v1/session', undefined, { username, password }), 200, 'login').body['token']);
  const session = (): Promise<string> => login('alice', PASSWORDS.alice);
  const adminToken = async (): Promise<string> => {
    if (admin === undefined) admin = String(expect(await api(base, 'POST', '/api/v1/session', undefined, { username: 'admin', password: PASSWORDS.admin }), 200, 'admin login').body['token']);
    return admin;
  };
  const anySession = async (): Promise<string> => sessions[Math.floor(Math.random() * sessions.length)] ?? (await session());

  const steps: Record<Exclude<Kind, 'websocket'>, Step> = {
    'local-login': async () => {
      sessions.push(await session());
      if (sessions.length > 20) sessions.shift();
      return '200';
    },
    // A session of its own: a pooled one may be in use by another loop, which would then see it refused.
    logout: async () => {
      const token = await session();
      expect(await api(base, 'DELETE', '/api/v1/session', token), 200, 'logout');
      ledger.loggedOut.push(token);
      return '200';
    },
    'api-request': async () => String(expect(await api(base, 'GET', '/api/v1/account/alice', await anySession()), 200, 'account').status),
    'sso-login': async () => {
      const relyingParty = (rp ??= await stage('discovery', () => svcWebClient(base, SECRET_KEY)));
      const redirectUri = `${base}/auth/callback`;
      const login = await authorizationRequest(relyingParty, redirectUri, 'openid offline_access');
      const browser = new FormBrowser();
      const form = await stage('authorization request to the password form', () => browser.go(login.href, redirectUri));
      if (!isPage(form)) throw new Error('no password form');
      const done = await stage('password form to the callback', () => browser.submit(form, { ...SSO_USER }, redirectUri));
      if (isPage(done)) throw new Error(`password form answered ${done.status}`);
      const tokens = await stage('code grant', () => client.authorizationCodeGrant(relyingParty, done, { pkceCodeVerifier: login.verifier, expectedState: login.state }));
      if (tokens.refresh_token === undefined) throw new Error('no refresh token');
      chains.push(tokens.refresh_token);
      if (chains.length > 8) chains.shift();
      return 'code grant';
    },
    refresh: async () => {
      const token = chains.shift();
      if (token === undefined) return 'no chain yet';
      const res = await fetch(`${base}/api/idp/token`, {
        method: 'POST',
        headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      if (res.status !== 200 || typeof body['refresh_token'] !== 'string') throw new Error(`refresh: ${res.status} ${String(body['error'] ?? '')} ${String(body['error_description'] ?? '')}`.trim());
      chains.push(body['refresh_token']);
      return '200';
    },
    'proxy-plain': async () => String(expect(await api(base, 'GET', '/api/v1/extensions/soak/plain', await anySession()), 200, 'proxy').status),
    'proxy-upload': async () => {
      const res = await fetch(`${base}/api/v1/extensions/soak/upload`, { method: 'POST', headers: { authorization: `Bearer ${await anySession()}` }, body: UPLOAD, signal: AbortSignal.timeout(60_000) });
      const body = (await res.json().catch(() => ({}))) as { bytes?: number };
      if (res.status !== 200 || body.bytes !== UPLOAD.length) throw new Error(`upload: ${res.status}, ${String(body.bytes)} bytes arrived`);
      return '200';
    },
    'proxy-stream': async () => {
      const res = await fetch(`${base}/api/v1/extensions/soak/stream`, { headers: { authorization: `Bearer ${await anySession()}` }, signal: AbortSignal.timeout(TIMEOUT_MS) });
      const bytes = (await res.arrayBuffer()).byteLength;
      if (res.status !== 200 || bytes !== STREAM_BYTES) throw new Error(`stream: ${res.status}, ${bytes} of ${STREAM_BYTES} bytes`);
      return '200';
    },
    'token-create': async () => {
      const id = `soak-${process.pid}-${++tokenSeq}`;
      const reply = expect(await api(base, 'POST', '/api/v1/account/alice/token', await adminToken(), { id }), 200, 'token create');
      ledger.liveTokens.set(id, String(reply.body['token']));
      return '200';
    },
    'token-delete': async () => {
      // The oldest, once a few are live: creation and deletion balance below the per-account cap.
      const first = ledger.liveTokens.entries().next();
      if (first.done === true || ledger.liveTokens.size < LIVE_TOKENS) return 'too few to delete';
      const [id, token] = first.value;
      expect(await api(base, 'DELETE', `/api/v1/account/alice/token/${id}`, await adminToken()), 200, 'token delete');
      ledger.liveTokens.delete(id);
      ledger.deletedTokens.set(id, token);
      return '200';
    },
    'config-edit': configEdit,
  };

  const record = (kind: Kind, ok: boolean, detail: string): void => {
    // One line each: a detail may quote an HTML page, which would break the report's tables.
    ledger.outcomes.push({ at: Date.now(), kind, ok, detail: detail.replace(/\s+/g, ' ').slice(0, 240) });
  };

  const loop = async (kind: Exclude<Kind, 'websocket'>): Promise<void> => {
    const interval = 1000 / RATES[kind];
    let next = Date.now() + Math.random() * interval;
    while (running) {
      await sleep(Math.max(0, next - Date.now()));
      if (!running) break;
      next += interval;
      try {
        record(kind, true, await steps[kind]());
      } catch (err: unknown) {
        // A token that failed (say, the admin's session after a restart of its process's state) is made again.
        if (kind === 'token-create' || kind === 'token-delete') admin = undefined;
        record(kind, false, describeError(err));
      }
      if (next < Date.now() - interval) next = Date.now();
    }
  };

  /** One WebSocket held open through the proxy; a message a second must come back; reopened when cut. */
  const holdSocket = async (): Promise<void> => {
    while (running) {
      const token = await login('carol', PASSWORDS.carol).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      const opened = token instanceof Error ? token : await new Promise<WebSocket | Error>((resolve) => {
        const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/extensions/soak/ws`, { headers: { authorization: `Bearer ${token}` } });
        ws.once('open', () => resolve(ws));
        ws.once('unexpected-response', (_req, res) => resolve(new Error(`upgrade answered ${String(res.statusCode)}`)));
        ws.once('error', (err) => resolve(err));
      });
      if (opened instanceof Error) {
        record('websocket', false, `open: ${opened.message}`);
        await sleep(1000);
        continue;
      }
      const ws = opened;
      let pending = 0;
      ws.on('message', () => {
        pending = 0;
        record('websocket', true, 'echo');
      });
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      ws.on('error', () => undefined);
      while (running && ws.readyState === WebSocket.OPEN) {
        if (pending > 0) {
          record('websocket', false, 'no echo within 1 s');
          ws.terminate();
          break;
        }
        pending++;
        ws.send('ping');
        await Promise.race([sleep(1000), closed]);
      }
      if (running && ws.readyState !== WebSocket.OPEN) record('websocket', false, `closed (${String(await closed)})`);
      ws.terminate();
    }
  };

  const loops = [...(Object.keys(steps) as Exclude<Kind, 'websocket'>[]).map(loop), holdSocket()];
  return {
    ledger,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** `work`, its failure prefixed with the stage of a multi-request step it failed in. */
async function stage<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err: unknown) {
    throw new Error(name, { cause: err });
  }
}

/**
 * The message and what really failed beneath it: fetch says only "fetch failed" and keeps the
 * socket's reason in its causes, which `describeFailure` reads as svc's own callers do.
 */
function describeError(err: unknown): string {
  return err instanceof Error && innermostCause(err) !== err ? `${err.message}: ${describeFailure(err)}` : describeFailure(err);
}
