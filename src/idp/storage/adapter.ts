/**
 * oidc-provider's storage adapter over the state backend, so that sessions, interactions,
 * codes and tokens live wherever svc's state lives: in the process by default, in Redis when
 * replicas share one (a code issued by one replica is redeemed at another). Nothing is cached
 * in the instance: every answer comes from the backend. Key layout: ./adapter-keys.ts.
 *
 * What oidc-provider relies on, and how it holds here:
 * - consume(): the provider reads a code (or refresh token), checks `consumed`, then consumes
 *   it, so two redemptions racing between the two steps would both pass. consume() marks with
 *   setIfAbsentFor, so exactly one wins; the other gets the error the provider gives for a
 *   reused code (invalid_grant; invalid_request_uri for a pushed request) and no tokens.
 *   A mark is never removed by a later upsert: once consumed, always consumed. The mark's
 *   earlier name (adapter-keys.ts) counts too and is claimed with it, so a record consumed
 *   before the rename, or by a replica of the earlier release, is never consumed again.
 * - revokeByGrantId(): every token of the grant, of every model, through ./grant-index.ts.
 *   A token is listed before it is written, so none can exist unlisted.
 * - findByUid / findByUserCode: index keys with the record's TTL; a stale index entry (record
 *   destroyed, or the id reused with another uid) answers undefined.
 * - TTLs from expiresIn; payloads and ids bounded (./adapter-payload.ts).
 * - Interactions and device codes, which anonymous requests make, are charged to the request's
 *   source before they are written and given back on destroy/consume (./pending-bound.ts).
 * - No id as the provider gave it is kept (./adapter-keys.ts): keys hold refs, a payload's `jti`
 *   (its id) is put back by find(), and an Interaction's copy of the session cookie is dropped
 *   (the provider never reads it back).
 */
import { errors, type Adapter, type AdapterConstructor, type AdapterPayload } from 'oidc-provider';
import { createSealer } from '../../lib/sealed.js';
import { temporarilyUnavailable } from '../unavailable.js';
import type { StateBackend } from '../../state/state.js';
import {
  consumedKey, createIdRefs, formerConsumedKey, type IdRef, grantMember, isModelName, parseGrantMember, recordKey, uidKey, userCodeKey,
} from './adapter-keys.js';
import {
  decodePayload, encodePayload, isLookupId, MAX_PAYLOAD_BYTES, ttlMsFor, withoutBearerValues,
} from './adapter-payload.js';
import { createGrantIndex, MAX_GRANT_MEMBERS, type GrantIndex } from './grant-index.js';
import type { PendingBound, PendingKind } from './pending-bound.js';
import { isSessionRekey } from './session-rekey.js';

/**
 * The models oidc-provider consumes (their model classes define consume()): only their records
 * can carry a consumed mark, so only their look-ups and saves touch one. Any other model's
 * consume() is refused rather than marked.
 */
export const CONSUMABLE_MODELS: ReadonlySet<string> = new Set([
  'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'PushedAuthorizationRequest',
  'BackchannelAuthenticationRequest', 'PreAuthorizedCode',
]);

/** The models whose records carry a grantId that revoking the grant must reach. */
export const GRANTABLE_MODELS: ReadonlySet<string> = new Set([
  'AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode',
  'BackchannelAuthenticationRequest', 'PreAuthorizedCode',
]);

export interface StateAdapterOptions {
  /** `server.secretkey`: the key of the refs that stand for ids in the backend (./adapter-keys.ts). */
  readonly serverSecretKey: string;
  /** Epoch ms; consume() stamps with it and the grant index prunes by it. */
  readonly now?: () => number;
  readonly maxPayloadBytes?: number;
  readonly maxGrantMembers?: number;
  /**
   * The bound on the records anonymous requests make (Interaction, DeviceCode; ./pending-bound.ts),
   * charged to `sourceOf()`, the source of the request being served: a new record past the bound
   * is refused with `temporarily_unavailable` before anything is written, and a record used up or
   * removed gives its share back at once.
   */
  readonly pending?: { readonly bound: PendingBound; readonly sourceOf: () => string };
}

/** Sealed ids remembered once opened (src/lib/sealed.ts), per server key. */
const REMEMBERED_OPENS = 2048;

/** The models anonymous requests make records of. */
const BOUNDED_MODELS: ReadonlySet<string> = new Set<PendingKind>(['Interaction', 'DeviceCode']);

/** A bounded record without a lifetime (none is, today) is charged for a day, not forever. */
const UNTIMED_CHARGE_MS = 24 * 3600 * 1000;

function pendingRefused(model: string): Error {
  return temporarilyUnavailable(`too many ${model === 'DeviceCode' ? 'device logins' : 'logins'} are pending; try again in a few minutes`);
}

/** The class for oidc-provider's `adapter` option: `new Adapter('AccessToken')`. */
export function createStateAdapterClass(state: StateBackend, options: StateAdapterOptions): AdapterConstructor {
  const now = options.now ?? Date.now;
  const ref = createIdRefs(options.serverSecretKey);
  // Records read again and again (a grant at each refresh, a session at each authorization) are opened once.
  const ids = createSealer(options.serverSecretKey, 'idp-record-id', { rememberOpened: REMEMBERED_OPENS });
  /** A record reached through an index: its sealed `jti`, opened for the record's own key. */
  const opened = (model: string, at: string, payload: AdapterPayload): AdapterPayload | undefined => {
    if (typeof payload.jti !== 'string') return payload;
    const jti = ids.open(payload.jti, recordKey(model, at));
    return jti === undefined ? undefined : { ...payload, jti };
  };
  const maxPayloadBytes = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
  const grants = createGrantIndex({ state, now, maxMembers: options.maxGrantMembers ?? MAX_GRANT_MEMBERS });
  const { pending } = options;
  /** A bounded record used up or removed: its share back at once (a finished or abandoned login). */
  const release = (model: string, at: string): Promise<void> | undefined =>
    (pending !== undefined && BOUNDED_MODELS.has(model) ? pending.bound.release(recordKey(model, at)) : undefined);

  return class StateAdapter implements Adapter {
    readonly #model: string;

    constructor(name: string) {
      if (!isModelName(name)) throw new TypeError(`not an oidc-provider model name: ${JSON.stringify(name)}`);
      this.#model = name;
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const model = this.#model;
      if (!isLookupId(id)) throw new RangeError(`identity provider ${model} id is empty or too long`);
      const at = ref(id);
      const text = encodePayload(model, withoutBearerValues(payload, (jti) => ids.seal(jti, recordKey(model, at))), maxPayloadBytes);
      const ttlMs = ttlMsFor(expiresIn);
      const ttl = ttlMs === undefined ? {} : { ttlMs };
      if (pending !== undefined && BOUNDED_MODELS.has(model)) {
        const record = { kind: model as PendingKind, key: recordKey(model, at), source: pending.sourceOf(), bytes: Buffer.byteLength(text), ttlMs: ttlMs ?? UNTIMED_CHARGE_MS };
        if (!(await pending.bound.admit(record))) throw pendingRefused(model);
      }
      if (GRANTABLE_MODELS.has(model) && isLookupId(payload.grantId)) {
        await grants.add(ref(payload.grantId), grantMember(model, at), ttlMs);   // before the record
      }
      await Promise.all([
        state.set(recordKey(model, at), text, ttl),
        isLookupId(payload.uid) ? state.set(uidKey(model, ref(payload.uid)), at, ttl) : undefined,
        isLookupId(payload.userCode) ? state.set(userCodeKey(model, ref(payload.userCode)), at, ttl) : undefined,
        // A consumed record saved again stays consumed as long as it lives (no-op otherwise).
        ttlMs === undefined || !CONSUMABLE_MODELS.has(model) ? undefined : state.expire(consumedKey(model, at), ttlMs),
        ttlMs === undefined || !CONSUMABLE_MODELS.has(model) ? undefined : state.expire(formerConsumedKey(model, at), ttlMs),
      ]);
    }

    /** A payload whose sealed `jti` does not open for this key was moved here: not found. */
    async find(id: string): Promise<AdapterPayload | undefined> {
      if (!isLookupId(id)) return undefined;
      const at = ref(id);
      const payload = await findRecord(state, this.#model, at);
      return payload === undefined ? undefined : opened(this.#model, at, payload);
    }

    /** Through the index to the record's ref; the sealed `jti` is then the way back to its id. */
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      if (!isLookupId(uid)) return undefined;
      const at = await state.get(uidKey(this.#model, ref(uid)));
      const payload = at === null ? undefined : await findRecord(state, this.#model, at);
      return payload?.uid === uid ? opened(this.#model, at as string, payload) : undefined;
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      if (!isLookupId(userCode)) return undefined;
      const at = await state.get(userCodeKey(this.#model, ref(userCode)));
      const payload = at === null ? undefined : await findRecord(state, this.#model, at);
      return payload?.userCode === userCode ? opened(this.#model, at as string, payload) : undefined;
    }

    async consume(id: string): Promise<void> {
      const model = this.#model;
      if (!CONSUMABLE_MODELS.has(model)) throw new TypeError(`identity provider ${model} records are never consumed`);
      if (!isLookupId(id)) return;
      // The mark lives as long as the record (forever with it); an absent record gets none.
      const stamp = String(Math.floor(now() / 1000));
      const at = ref(id);
      const [marked] = await Promise.all([
        state.setIfAbsentFor(consumedKey(model, at), stamp, recordKey(model, at), { formerKey: formerConsumedKey(model, at) }),
        release(model, at),
      ]);
      if (marked === 'exists') throw alreadyConsumed(model);
    }

    async destroy(id: string): Promise<void> {
      if (!isLookupId(id)) return;
      const at = ref(id);
      await Promise.all([removeRecord(state, grants, ref, this.#model, at, { unlist: true }), release(this.#model, at)]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      if (!isLookupId(grantId)) return;
      const grant = ref(grantId);
      const members = await grants.members(grant);
      await Promise.all(members.map(async (member) => {
        const at = parseGrantMember(member);
        if (at !== undefined) await removeRecord(state, grants, ref, at.model, at.id, { unlist: false });
      }));
      await grants.forget(grant, members);
    }
  };
}

/** The record stored under a ref, as stored (its `jti` sealed), with its consumed mark. */
async function findRecord(state: StateBackend, model: string, at: string): Promise<AdapterPayload | undefined> {
  const [text, mark, formerMark] = await Promise.all([
    state.get(recordKey(model, at)),
    CONSUMABLE_MODELS.has(model) ? state.get(consumedKey(model, at)) : null,
    CONSUMABLE_MODELS.has(model) ? state.get(formerConsumedKey(model, at)) : null,
  ]);
  if (text === null) return undefined;
  const consumed = mark ?? formerMark;
  const payload = decodePayload(text);
  return consumed === null ? payload : { ...payload, consumed: Number(consumed) };
}

/**
 * Takes the record (so two concurrent removals do the index work once), then drops its mark
 * and the index entries that still point at it. `unlist: false` when the caller unlists the
 * whole grant itself.
 */
async function removeRecord(
  state: StateBackend, grants: GrantIndex, ref: IdRef, model: string, at: string, { unlist }: { unlist: boolean },
): Promise<void> {
  // Replicated: a session ended or a token revoked must not come back with a failover.
  const text = await state.take(recordKey(model, at), { replicated: await removalMustSurviveFailover(state, model, at) });
  if (CONSUMABLE_MODELS.has(model)) await Promise.all([state.delete(consumedKey(model, at)), state.delete(formerConsumedKey(model, at))]);
  if (text === null) return;
  const payload = decodePayload(text);
  await Promise.all([
    isLookupId(payload.uid) ? deleteIfPointsAt(state, uidKey(model, ref(payload.uid)), at) : undefined,
    isLookupId(payload.userCode) ? deleteIfPointsAt(state, userCodeKey(model, ref(payload.userCode)), at) : undefined,
    unlist && GRANTABLE_MODELS.has(model) && isLookupId(payload.grantId)
      ? grants.remove(ref(payload.grantId), grantMember(model, at))
      : undefined,
  ]);
}

/**
 * Whether a removal waits for a replica. Not for what grants nothing if it came back: an
 * interaction (removed when its login ends; only the browser holding its login cookie could
 * finish it again, within its 10 minutes), a session nobody is logged in to, nor a session's old
 * id at a login step's re-key (./session-rekey.ts: the same browser holds the same login under
 * the new id). Waiting there made SSO logins fail while a primary had no replica (after a
 * failover, until the lost node returned). A logged-in session's removal (a logout) still waits.
 */
async function removalMustSurviveFailover(state: StateBackend, model: string, at: string): Promise<boolean> {
  if (model === 'Interaction') return false;
  if (model !== 'Session') return true;
  if (isSessionRekey()) return false;
  const text = await state.get(recordKey(model, at));
  return text !== null && decodePayload(text).accountId !== undefined;
}

async function deleteIfPointsAt(state: StateBackend, key: string, at: string): Promise<void> {
  if ((await state.get(key)) === at) await state.delete(key);
}

/** The loser of a race to redeem: the provider's own answer to a code or token used twice. */
function alreadyConsumed(model: string): Error {
  if (model === 'PushedAuthorizationRequest') return new errors.InvalidRequestUri('request_uri already used');
  return new errors.InvalidGrant(`${model} already consumed`);
}
