/**
 * /api/v1/account/... (DESIGN §4). Thin: every route needs a caller, parses its input, calls
 * one domain function and maps the result. Who may do what is decided in src/accounts.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type { Accounts } from '../../accounts/account-queries.js';
import { isSelf } from '../../accounts/account-queries.js';
import type { ApiTokens } from '../../accounts/api-tokens.js';
import type { ChangePassword } from '../../accounts/password-change.js';
import { parseDuration } from '../../lib/duration.js';
import { InvalidRequest } from '../../errors.js';
import type { LoginService } from '../../session/login.js';
import { requirePrincipal } from '../auth.js';
import { optionalString, readJson, requireString, type JsonObject } from '../body.js';
import { setSessionCookie } from '../cookies.js';
import type { RecordLogin } from './record-login.js';
import { ISSUER } from '../../session/tokens.js';
import type { AppState } from '../state.js';
import { NO_AUDIT, type AuditTrail } from '../../audit/trail.js';
import { auditCaller } from '../audit-caller.js';
import { parseTrustedProxies, type TrustedProxies } from '../client-address.js';

export interface AccountRouteDeps {
  readonly accounts: Accounts;
  readonly apiTokens: ApiTokens;
  readonly changePassword: ChangePassword;
  readonly login: Pick<LoginService, 'issueSession'>;
  readonly recordLogin: RecordLogin;
  /** svc-cm `url` in force, for the cookie's Secure flag (cookies.ts). */
  readonly configuredUrl: () => string;
  /** token-created, token-deleted, password-changed (docs/audit.md). */
  readonly audit?: AuditTrail;
  readonly trustedProxies?: TrustedProxies;
}

export function accountRoutes(deps: AccountRouteDeps): Router<AppState> {
  const { accounts, apiTokens } = deps;
  const audit = deps.audit ?? NO_AUDIT;
  const trusted = deps.trustedProxies ?? parseTrustedProxies(undefined);
  const router = declaredRouter('/api/v1/account');

  router.get('/', allow('caller', 'accounts, get (the list shows the accounts it allows)'), function listAccounts(ctx) {
    ctx.body = { items: accounts.list(requirePrincipal(ctx)) };
  });

  router.get('/can-i/:resource/:action/:object', allow('caller'), function canI(ctx) {
    const [resource, action, object] = params(ctx.params, 'resource', 'action', 'object');
    const yes = accounts.canI(requirePrincipal(ctx), resource, action, object);
    ctx.body = { value: yes ? 'yes' : 'no' };
  });

  // Changing one's own password ends one's sessions; a session caller gets a fresh one back.
  router.put('/password', allow('caller', 'the current password; another account: accounts, update <name>'), async function updatePassword(ctx) {
    const caller = requirePrincipal(ctx);
    const body = await readJson(ctx);
    const name = optionalString(body, 'name') || caller.username;
    const request = { name, currentPassword: requireString(body, 'currentPassword'), newPassword: requireString(body, 'newPassword') };
    const changedEvent = { category: 'iam', type: 'change', action: 'password-changed', ...auditCaller(ctx, caller, trusted) } as const;
    let changed;
    try {
      changed = await deps.changePassword(caller, request);
    } catch (err: unknown) {
      // Messages of refusals are written for the client and carry no secret (errors.ts).
      audit.record({ ...changedEvent, outcome: 'failure', reason: err instanceof Error ? err.message : 'unknown', svc: { account: name } });
      throw err;
    }
    audit.record({ ...changedEvent, outcome: 'success', svc: { account: name } });
    if (!isSelf(caller, name) || caller.kind !== 'session') {
      ctx.body = {};
      return;
    }
    const { token, tokenId, expiresAt } = await deps.login.issueSession(name, changed.passwordHash);
    await deps.recordLogin(ctx.req, { id: tokenId, account: name, kind: 'local', issuer: ISSUER, expiresAt }, ctx.state.tokenFromCookie === true);
    if (ctx.state.tokenFromCookie === true) setSessionCookie(ctx, token, expiresAt, deps.configuredUrl());
    ctx.body = { token };
  });

  router.get('/:name', allow('caller', 'accounts, get <name>'), function getAccount(ctx) {
    const [name] = params(ctx.params, 'name');
    ctx.body = accounts.get(requirePrincipal(ctx), name);
  });

  router.post('/:name/token', allow('caller', 'accounts, update <name>'), async function generateToken(ctx) {
    const [name] = params(ctx.params, 'name');
    accounts.authorize(requirePrincipal(ctx), 'update', name);
    const body = await readJson(ctx);
    const expiresInSeconds = expiresIn(body);
    const { token, id } = await apiTokens.generate(name, { id: optionalString(body, 'id'), expiresInSeconds });
    audit.record({ category: 'iam', type: 'creation', action: 'token-created', outcome: 'success', ...auditCaller(ctx, requirePrincipal(ctx), trusted), svc: { account: name, tokenId: id, ...(expiresInSeconds !== undefined ? { expiresInSeconds } : {}) } });
    ctx.body = { token };
  });

  router.delete('/:name/token/:id', allow('caller', 'accounts, update <name>'), async function deleteToken(ctx) {
    const [name, id] = params(ctx.params, 'name', 'id');
    accounts.authorize(requirePrincipal(ctx), 'update', name);
    await apiTokens.remove(name, id);
    audit.record({ category: 'iam', type: 'deletion', action: 'token-deleted', outcome: 'success', ...auditCaller(ctx, requirePrincipal(ctx), trusted), svc: { account: name, tokenId: id } });
    ctx.body = {};
  });

  return router;
}

/** `expiresIn`: seconds as a number, or a duration string such as "24h" (the CLI's --expires-in). */
function expiresIn(body: JsonObject): number | undefined {
  const value = body['expiresIn'];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string') {
    const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : parseDuration(value);
    if (ms !== undefined && ms >= 0) return Math.ceil(ms / 1000);
  }
  throw new InvalidRequest("field 'expiresIn' must be a whole number of seconds or a duration such as 24h, 90m (0: never)");
}

/** Route parameters the pattern guarantees, typed as present. */
function params<const N extends readonly string[]>(values: Readonly<Record<string, string | undefined>>, ...names: N): { [K in keyof N]: string } {
  return names.map((name) => {
    const value = values[name];
    if (value === undefined) throw new InvalidRequest(`path parameter '${name}' is missing`);
    return value;
  }) as { [K in keyof N]: string };
}
