/**
 * The connector side of a login, apart from HTTP: the CSRF token of the password form, a
 * password login, a browser connector's round trip (its transaction kept single-use in the state
 * backend), and the identity kept for the interaction until the browser is back on the
 * provider's pages. The routes (interactions.ts) turn these outcomes into pages and redirects.
 *
 * An interaction has at most one transaction, stored under its uid: a start replaces the one
 * before, so starting again and again (every GET of a connector's page is a start) cannot fill
 * the state backend. The `state`/`RelayState` sent upstream is `<nonce>.<uid>`: the uid finds
 * the transaction, the nonce proves the answer is for the latest start (an earlier start's
 * answer finds its nonce replaced and completes nothing). The uid is no secret there: /callback
 * redirects to the interaction's path anyway. Rejected: an index from uid to the latest state,
 * which takes two writes that concurrent starts can interleave, leaving records behind.
 *
 * A round trip is bound to the browser that started it: `begin` draws a random binding the
 * browser keeps in a cookie, and the transaction and then the pending login keep only its
 * SHA-256. The upstream's answer completes the login only when it arrives with that binding, and
 * /finish hands the identity only to it; `state` alone (which the upstream URL carries, so anyone
 * the URL is sent to holds it) completes nothing.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { BrowserStart, Connector, Identity, LoginContext, UpstreamSession } from '../../../connectors/connector.js';
import { upstreamReason } from '../../../connectors/errors.js';
import { isClaimRuleRefused } from '../../claims/evaluate.js';
import { secretKeyObject } from '../../lib/secret-key.js';
import { describeFailure } from '../../lib/tls-fetch.js';
import { NO_LOGIN_OUTCOMES, type LoginOutcomes } from '../../session/login-outcomes.js';
import type { StateBackend } from '../../state/state.js';
import type { AccountStore } from '../storage/federated-accounts.js';
import type { PendingBound } from '../storage/pending-bound.js';
import { subjectOf } from '../claims.js';
import { CONNECTOR_TRANSACTION_TTL_S, REFRESH_TOKEN_TTL_S, SESSION_TTL_S } from '../lifetimes.js';

export interface LoginFlowDeps {
  readonly state: StateBackend;
  readonly accounts: AccountStore;
  /** `<url>/api/idp/callback`. */
  readonly callbackUrl: string;
  /** Keys the CSRF tokens; never leaves the server. */
  readonly csrfKey: string;
  readonly log: Logger;
  /** Counts each browser login's outcome (svc_login_outcomes_total, method idp-browser). */
  readonly outcomes?: LoginOutcomes;
  /** Bounds the transactions of browser round trips with the other pending logins (../storage/pending-bound.ts). */
  readonly pending?: PendingBound;
}

/** A round trip refused because its source (or everyone) holds the bound on pending logins. */
export class PendingLoginsRefused extends Error {
  constructor() {
    super('too many logins are pending; try again in a few minutes');
    this.name = 'PendingLoginsRefused';
  }
}

/** What the request asked, as connectors and the account store need it. */
export interface LoginRequest {
  readonly uid: string;
  readonly connectorId: string;
  readonly scope: string;
  /** Who the request counts as for the pending bound (../../http/client-address.ts sourceOf). */
  readonly source: string;
}

export type PasswordOutcome =
  | { readonly kind: 'ok'; readonly sub: string }
  /** `why`: what the connector said, when it said (ldap: unknown user, wrong password). */
  | { readonly kind: 'wrong'; readonly why?: string }
  /** `why`: the failure in one line, for the log, as the connector gave it (its stack is logged at debug). */
  | { readonly kind: 'unavailable'; readonly why: string }
  /** The password was right, but the connector's claim rules refused the identity: `message` is the rule's, `why` names it. */
  | { readonly kind: 'refused'; readonly message: string; readonly why: string };

/** A browser connector's start, and the binding the browser must keep (a cookie) to complete it. */
export interface BoundStart {
  readonly start: BrowserStart;
  readonly binding: string;
}

export type CallbackOutcome =
  | { readonly kind: 'ok'; readonly uid: string }
  | { readonly kind: 'expired' }
  /** The answer came back in a browser without the binding of the login it answers. */
  | { readonly kind: 'foreign' }
  /** `message`: the connector's own sentence for the person (an SvcError's), when it gave one. */
  | { readonly kind: 'failed'; readonly message?: string };

interface Transaction {
  readonly uid: string;
  /** The nonce of the `state` this start sent upstream: only the latest start's answer completes. */
  readonly nonce: string;
  readonly connectorId: string;
  readonly scope: string;
  readonly saved?: string;
  /** SHA-256 (base64url) of the binding the starting browser holds. */
  readonly binding: string;
}

interface Pending {
  readonly sub: string;
  readonly binding: string;
  /** The upstream's session of the login (an OIDC provider's), for its back-channel logout. */
  readonly upstream?: UpstreamSession;
}

/** The key of the login result that carries the upstream session (oidc-provider keeps unknown keys of `login`). */
export const UPSTREAM_SESSION_RESULT = 'svcUpstreamSession';

/** What /finish logs in: the provider's `sub`, and the upstream session it came from. */
export interface FinishedLogin {
  readonly sub: string;
  readonly upstream?: UpstreamSession;
}

/** Time a connector may take for one login step (a directory bind, a token exchange). */
const CONNECTOR_TIMEOUT_MS = 30_000;
/** One per interaction: a start replaces the transaction of the one before. */
const txnKey = (uid: string): string => `idp:txn:${uid}`;
const pendingKey = (uid: string): string => `idp:pending:${uid}`;
const hasScope = (scope: string, name: string): boolean => scope.split(' ').includes(name);

export interface LoginFlow {
  csrfToken(uid: string): string;
  csrfValid(uid: string, token: string): boolean;
  /** `admitEntry`: the password guard's count of the entry the name resolves to (LoginContext.admitEntry). */
  password(connector: Connector & { kind: 'password' }, req: LoginRequest, username: string, password: string, admitEntry?: (entry: string) => Promise<boolean>): Promise<PasswordOutcome>;
  begin(connector: Connector & { kind: 'browser' }, req: LoginRequest): Promise<BoundStart>;
  /** The interaction a round trip's `state` belongs to (read, not used up), to route its answer there. */
  interactionOf(stateParam: string): Promise<string | undefined>;
  /**
   * Takes the transaction by `state` (single use, whatever the outcome) and, when it belongs to
   * interaction `uid` and `binding` is the one its browser was given, completes it with its connector.
   */
  complete(uid: string, stateParam: string, binding: string | undefined, params: URLSearchParams, connectorOf: (id: string) => Connector | undefined, requestId?: string): Promise<CallbackOutcome>;
  /** The sub a callback logged in for this interaction, once, and only for the browser with its binding. */
  takePending(uid: string, binding: string | undefined): Promise<FinishedLogin | undefined>;
}

export function createLoginFlow(deps: LoginFlowDeps): LoginFlow {
  const outcomes = deps.outcomes ?? NO_LOGIN_OUTCOMES;
  const csrfKey = secretKeyObject(deps.csrfKey);
  const contextFor = (scope: string): LoginContext => ({
    callbackUrl: deps.callbackUrl, wantGroups: hasScope(scope, 'groups'), offlineAccess: hasScope(scope, 'offline_access'), signal: AbortSignal.timeout(CONNECTOR_TIMEOUT_MS),
  });

  /** Keeps the identity for findAccount; as long as the longest token the login may get. */
  async function remember(req: Pick<LoginRequest, 'connectorId' | 'scope'>, identity: Identity): Promise<string> {
    const sub = subjectOf(identity.userId, req.connectorId);
    const ttlS = hasScope(req.scope, 'offline_access') ? REFRESH_TOKEN_TTL_S : SESSION_TTL_S;
    // The upstream session belongs to this login, not to the account every login of the user shares.
    const { upstreamSession: _login, ...kept } = identity;
    await deps.accounts.save(sub, { connectorId: req.connectorId, identity: kept }, ttlS);
    return sub;
  }

  return {
    csrfToken: (uid) => createHmac('sha256', csrfKey).update(`idp csrf:${uid}`).digest('base64url'),
    csrfValid(uid, token) {
      const expected = Buffer.from(this.csrfToken(uid));
      const given = Buffer.from(token);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },

    async password(connector, req, username, password, admitEntry) {
      let identity: Identity | null;
      let why: string | undefined;
      try {
        const ctx: LoginContext = { ...contextFor(req.scope), refused: (reason) => { why = reason; }, ...(admitEntry === undefined ? {} : { admitEntry }) };
        identity = await connector.login(username, password, ctx);
      } catch (err: unknown) {
        if (isClaimRuleRefused(err)) return { kind: 'refused', message: err.message, why: err.reason };
        // The attempt's one line (password-guard.ts) says why; the stack is for debugging only.
        deps.log.debug({ err, connector: req.connectorId }, 'identity provider: password connector failed');
        return { kind: 'unavailable', why: upstreamReason(err) ?? `the identity source failed: ${describeFailure(err)}` };
      }
      if (identity === null) return why === undefined ? { kind: 'wrong' } : { kind: 'wrong', why };
      return { kind: 'ok', sub: await remember(req, identity) };
    },

    async begin(connector, req) {
      const nonce = randomBytes(24).toString('base64url');
      const binding = randomBytes(32).toString('base64url');
      const start = await connector.begin(`${nonce}.${req.uid}`, contextFor(req.scope));
      const txn: Transaction = {
        uid: req.uid, nonce, connectorId: req.connectorId, scope: req.scope, binding: hashOf(binding), ...(start.saved !== undefined ? { saved: start.saved } : {}),
      };
      const text = JSON.stringify(txn);
      const ttlMs = CONNECTOR_TRANSACTION_TTL_S * 1000;
      // One transaction per interaction, charged like an interaction to its source: reloading the
      // start page neither grows the state nor gets past the source's share (a re-save keeps its charge).
      if (deps.pending !== undefined && !(await deps.pending.admit({ kind: 'ConnectorTransaction', key: txnKey(req.uid), source: req.source, bytes: Buffer.byteLength(text), ttlMs }))) {
        throw new PendingLoginsRefused();
      }
      // SET replaces: the interaction's earlier start, if any, is gone with its nonce.
      await deps.state.set(txnKey(req.uid), text, { ttlMs });
      return { start, binding };
    },

    async interactionOf(stateParam) {
      const parsed = parseState(stateParam);
      if (parsed === undefined) return undefined;
      const text = await deps.state.get(txnKey(parsed.uid));
      return text !== null && sameNonce(JSON.parse(text) as Transaction, parsed.nonce) ? parsed.uid : undefined;
    },

    async complete(uid, stateParam, binding, params, connectorOf, requestId = '') {
      const parsed = parseState(stateParam);
      if (parsed === undefined) return { kind: 'expired' };
      // An earlier start's answer leaves the latest start's transaction as it is.
      const current = await deps.state.get(txnKey(parsed.uid));
      if (current === null || !sameNonce(JSON.parse(current) as Transaction, parsed.nonce)) return { kind: 'expired' };
      const [text] = await Promise.all([deps.state.take(txnKey(parsed.uid)), deps.pending?.release(txnKey(parsed.uid))]);
      if (text === null) return { kind: 'expired' };
      const txn = JSON.parse(text) as Transaction;
      // A start in between replaced it: used up all the same (fail closed), the browser starts again.
      if (!sameNonce(txn, parsed.nonce)) return { kind: 'expired' };
      if (txn.uid !== uid || !sameHash(txn.binding, binding)) {
        // Used up all the same: a state that reached another browser ends the login it belongs to.
        outcomes.record('idp-browser', txn.connectorId, 'foreign-browser', { source: { requestId } });
        deps.log.warn({ connector: txn.connectorId, interaction: txn.uid, requestId }, 'identity provider: a login response came back in a browser that did not start the login; refused');
        return { kind: 'foreign' };
      }
      const connector = connectorOf(txn.connectorId);
      if (connector?.kind !== 'browser') return { kind: 'expired' };
      let identity: Identity;
      try {
        identity = await connector.complete(params, txn.saved, contextFor(txn.scope));
      } catch (err: unknown) {
        logCallbackFailure(deps.log, outcomes, txn.connectorId, requestId, err);
        const message = personMessage(err);
        return message === undefined ? { kind: 'failed' } : { kind: 'failed', message };
      }
      const sub = await remember(txn, identity);
      const pending: Pending = { sub, binding: txn.binding, ...(identity.upstreamSession !== undefined ? { upstream: identity.upstreamSession } : {}) };
      await deps.state.set(pendingKey(txn.uid), JSON.stringify(pending), { ttlMs: CONNECTOR_TRANSACTION_TTL_S * 1000 });
      outcomes.record('idp-browser', txn.connectorId, 'ok', { user: identity.username, userId: sub, groups: identity.groups, source: { requestId } });
      return { kind: 'ok', uid: txn.uid };
    },

    async takePending(uid, binding) {
      const text = await deps.state.take(pendingKey(uid));
      if (text === null) return undefined;
      const pending = JSON.parse(text) as Pending;
      if (!sameHash(pending.binding, binding)) return undefined;
      return { sub: pending.sub, ...(pending.upstream !== undefined ? { upstream: pending.upstream } : {}) };
    },
  };
}

/** `<nonce>.<uid>` as begin() sent it (a nonce has no dot); undefined for anything else. */
function parseState(value: string): { readonly nonce: string; readonly uid: string } | undefined {
  if (value.length > 200) return undefined;
  const dot = value.indexOf('.');
  if (dot <= 0 || dot === value.length - 1) return undefined;
  return { nonce: value.slice(0, dot), uid: value.slice(dot + 1) };
}

/** Whether `nonce` is the transaction's, in constant time (a record of an earlier release has none: false). */
function sameNonce(txn: Transaction, nonce: string): boolean {
  if (typeof txn.nonce !== 'string') return false;
  const a = Buffer.from(txn.nonce);
  const b = Buffer.from(nonce);
  return a.length === b.length && timingSafeEqual(a, b);
}

const hashOf = (binding: string): string => createHash('sha256').update(binding).digest('base64url');

/** Whether `binding` hashes to `expected`, in constant time; false without a binding. */
function sameHash(expected: string, binding: string | undefined): boolean {
  if (binding === undefined || binding === '' || binding.length > 100) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(hashOf(binding));
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The sentence a connector meant for the person: an SvcError's message (a connector's errors say
 * nothing of hosts, XML or secrets). By shape, not instanceof: a connector loaded with import()
 * may hold another copy of the class. Anything else stays behind the generic page.
 */
/**
 * One line per failed callback: a refusal (not in the groups, cancelled) at info, anything else
 * at warn, both with the reason in one line; the stack only at debug.
 */
function logCallbackFailure(log: Logger, outcomes: LoginOutcomes, connector: string, requestId: string, err: unknown): void {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  // Not in the groups, cancelled (permission_denied), or an answer the connector would not take (a SAML check).
  const refused = code === 'permission_denied' || code === 'unauthenticated';
  const operatorReason = (err as { reason?: unknown }).reason;
  // A claim rule's refusal: the rule's message and which rule, both for the audit trail.
  const reason = isClaimRuleRefused(err) ? `${err.message} (${err.reason})`
    : typeof operatorReason === 'string' ? operatorReason : refused ? (err as Error).message : describeFailure(err);
  const fields = { connector, reason, requestId };
  if (refused) {
    outcomes.record('idp-browser', connector, 'refused', { detail: reason, source: { requestId } });
    log.info(fields, 'identity provider: the connector refused the login');
  } else {
    outcomes.record('idp-browser', connector, code === 'unavailable' ? 'unavailable' : 'other', { detail: reason, source: { requestId } });
    log.warn(fields, 'identity provider: a connector failed a login callback');
  }
  log.debug({ err, connector, requestId }, 'identity provider: the callback failure in full');
}

function personMessage(err: unknown): string | undefined {
  if (!(err instanceof Error) || typeof (err as { code?: unknown }).code !== 'string') return undefined;
  return isSvcError(err) ? err.message : undefined;
}

function isSvcError(err: Error): boolean {
  for (let proto: unknown = Object.getPrototypeOf(err); proto !== null && proto !== undefined; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'SvcError') return true;
  }
  return false;
}
