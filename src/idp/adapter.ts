/**
 * oidc-provider's storage adapter over the state backend, so that sessions, interactions,
 * codes and tokens live wherever svc's state lives: in the process by default, in Redis when
 * replicas share one (a code issued by one replica is redeemed at another). Nothing is cached
 * in the instance: every answer comes from the backend. Key layout: ./adapter-keys.ts.
 *
 * What oidc-provider relies on, and how it holds here:
 * - consume(): the provider reads a code (or refresh token), checks `consumed`, then consumes
 *   it, so two redemptions racing between the two steps would both pass. consume() marks with
 *   setIfAbsent, so exactly one wins; the other gets the error the provider gives for a
 *   reused code (invalid_grant; invalid_request_uri for a pushed request) and no tokens.
 *   A mark is never removed by a later upsert: once consumed, always consumed.
 * - revokeByGrantId(): every token of the grant, of every model, through ./grant-index.ts.
 *   A token is listed before it is written, so none can exist unlisted.
 * - findByUid / findByUserCode: index keys with the record's TTL; a stale index entry (record
 *   destroyed, or the id reused with another uid) answers undefined.
 * - TTLs from expiresIn; payloads and ids bounded (./adapter-payload.ts).
 */
import { errors, type Adapter, type AdapterConstructor, type AdapterPayload } from 'oidc-provider';
import type { StateBackend } from '../state/state.js';
import {
  consumedKey, grantMember, isModelName, parseGrantMember, recordKey, uidKey, userCodeKey,
} from './adapter-keys.js';
import {
  decodePayload, encodePayload, isLookupId, MAX_PAYLOAD_BYTES, ttlMsFor,
} from './adapter-payload.js';
import { createGrantIndex, MAX_GRANT_MEMBERS, type GrantIndex } from './grant-index.js';

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
  /** Epoch ms; consume() stamps with it and the grant index prunes by it. */
  readonly now?: () => number;
  readonly maxPayloadBytes?: number;
  readonly maxGrantMembers?: number;
}

/** The class for oidc-provider's `adapter` option: `new Adapter('AccessToken')`. */
export function createStateAdapterClass(state: StateBackend, options: StateAdapterOptions = {}): AdapterConstructor {
  const now = options.now ?? Date.now;
  const maxPayloadBytes = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
  const grants = createGrantIndex({ state, now, maxMembers: options.maxGrantMembers ?? MAX_GRANT_MEMBERS });

  return class StateAdapter implements Adapter {
    readonly #model: string;

    constructor(name: string) {
      if (!isModelName(name)) throw new TypeError(`not an oidc-provider model name: ${JSON.stringify(name)}`);
      this.#model = name;
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const model = this.#model;
      if (!isLookupId(id)) throw new RangeError(`identity provider ${model} id is empty or too long`);
      const text = encodePayload(model, payload, maxPayloadBytes);
      const ttlMs = ttlMsFor(expiresIn);
      const ttl = ttlMs === undefined ? {} : { ttlMs };
      if (GRANTABLE_MODELS.has(model) && isLookupId(payload.grantId)) {
        await grants.add(payload.grantId, grantMember(model, id), ttlMs);   // before the record
      }
      await Promise.all([
        state.set(recordKey(model, id), text, ttl),
        isLookupId(payload.uid) ? state.set(uidKey(model, payload.uid), id, ttl) : undefined,
        isLookupId(payload.userCode) ? state.set(userCodeKey(model, payload.userCode), id, ttl) : undefined,
        // A consumed record saved again stays consumed as long as it lives (no-op otherwise).
        ttlMs === undefined || !CONSUMABLE_MODELS.has(model) ? undefined : state.expire(consumedKey(model, id), ttlMs),
      ]);
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      return findRecord(state, this.#model, id);
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      if (!isLookupId(uid)) return undefined;
      const id = await state.get(uidKey(this.#model, uid));
      const payload = id === null ? undefined : await this.find(id);
      return payload?.uid === uid ? payload : undefined;
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      if (!isLookupId(userCode)) return undefined;
      const id = await state.get(userCodeKey(this.#model, userCode));
      const payload = id === null ? undefined : await this.find(id);
      return payload?.userCode === userCode ? payload : undefined;
    }

    async consume(id: string): Promise<void> {
      const model = this.#model;
      if (!CONSUMABLE_MODELS.has(model)) throw new TypeError(`identity provider ${model} records are never consumed`);
      if (!isLookupId(id)) return;
      // The mark lives as long as the record (forever with it); an absent record gets none.
      const stamp = String(Math.floor(now() / 1000));
      if ((await state.setIfAbsentFor(consumedKey(model, id), stamp, recordKey(model, id))) === 'exists') throw alreadyConsumed(model);
    }

    async destroy(id: string): Promise<void> {
      if (isLookupId(id)) await removeRecord(state, grants, this.#model, id, { unlist: true });
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      if (!isLookupId(grantId)) return;
      const members = await grants.members(grantId);
      await Promise.all(members.map(async (member) => {
        const at = parseGrantMember(member);
        if (at !== undefined) await removeRecord(state, grants, at.model, at.id, { unlist: false });
      }));
      await grants.forget(grantId, members);
    }
  };
}

async function findRecord(state: StateBackend, model: string, id: string): Promise<AdapterPayload | undefined> {
  if (!isLookupId(id)) return undefined;
  const [text, consumed] = await Promise.all([
    state.get(recordKey(model, id)),
    CONSUMABLE_MODELS.has(model) ? state.get(consumedKey(model, id)) : null,
  ]);
  if (text === null) return undefined;
  const payload = decodePayload(text);
  return consumed === null ? payload : { ...payload, consumed: Number(consumed) };
}

/**
 * Takes the record (so two concurrent removals do the index work once), then drops its mark
 * and the index entries that still point at it. `unlist: false` when the caller unlists the
 * whole grant itself.
 */
async function removeRecord(
  state: StateBackend, grants: GrantIndex, model: string, id: string, { unlist }: { unlist: boolean },
): Promise<void> {
  // Replicated: a session ended or a token revoked must not come back with a failover.
  const text = await state.take(recordKey(model, id), { replicated: true });
  if (CONSUMABLE_MODELS.has(model)) await state.delete(consumedKey(model, id));
  if (text === null) return;
  const payload = decodePayload(text);
  await Promise.all([
    isLookupId(payload.uid) ? deleteIfPointsAt(state, uidKey(model, payload.uid), id) : undefined,
    isLookupId(payload.userCode) ? deleteIfPointsAt(state, userCodeKey(model, payload.userCode), id) : undefined,
    unlist && GRANTABLE_MODELS.has(model) && isLookupId(payload.grantId)
      ? grants.remove(payload.grantId, grantMember(model, id))
      : undefined,
  ]);
}

async function deleteIfPointsAt(state: StateBackend, key: string, id: string): Promise<void> {
  if ((await state.get(key)) === id) await state.delete(key);
}

/** The loser of a race to redeem: the provider's own answer to a code or token used twice. */
function alreadyConsumed(model: string): Error {
  if (model === 'PushedAuthorizationRequest') return new errors.InvalidRequestUri('request_uri already used');
  return new errors.InvalidGrant(`${model} already consumed`);
}
