/**
 * Where the identity provider's adapter keeps things in the state backend (bare keys; Redis
 * adds `svc:`). No key holds an id, uid, user code or grant id as the provider gave it: each is
 * replaced by its ref, an HMAC-SHA256 of it under a key derived from `server.secretkey`
 * (createIdRefs). Ids are bearer values (a refresh token, an access token, a code, the session
 * cookie): whoever can list or read the backend must not be able to redeem them, and without the
 * server's key a ref cannot be computed from a guess either. A record lives under its model name, CamelCase as oidc-provider names models;
 * every index lives under a lowercase word, so no id (whatever characters it holds) can make
 * a record key equal to an index key: the part before the id is fixed and differs.
 *
 *   idp:<Model>:<ref id>              the payload, JSON without its `jti`, TTL = expiresIn
 *   idp:consumed:{svc:idp:<Model>:<ref id>}
 *                                     epoch seconds of the first consume(), TTL = the record's; the
 *                                     record's stored key as hash tag, so both share a Redis Cluster
 *                                     slot (state.ts, markKeyFor)
 *   idp:consumed:<Model>:<ref id>     the same mark under its earlier name, read and claimed beside
 *                                     it until every record of the earlier release expired
 *   idp:uid:<Model>:<ref uid>         ref of the record's id with that uid (Session), same TTL
 *   idp:user-code:<Model>:<ref code>  ref of the record's id with that userCode (DeviceCode)
 *   idp:grant:<ref grantId>           hash: field `<Model>:<ref id>` per token of the grant, value
 *                                     its expiry in ms ('never' without one); TTL = the longest member's
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { BoundedCache } from '../../lib/bounded-cache.js';
import { secretKeyObject } from '../../lib/secret-key.js';
import { markKeyFor } from '../../state/state.js';

const ROOT = 'idp';

/** oidc-provider's model names (AccessToken, Session, ...): never a lowercase index word. */
const MODEL_NAME = /^[A-Z][A-Za-z]{0,63}$/;

export function isModelName(name: string): boolean {
  return MODEL_NAME.test(name);
}

export const recordKey = (model: string, id: string): string => `${ROOT}:${model}:${id}`;
export const consumedKey = (model: string, id: string): string => markKeyFor(recordKey(model, id), `${ROOT}:consumed:`);
/**
 * The consumed mark's earlier name (before it carried its record's hash tag): a record consumed
 * by an earlier release has only this one, and replicas of that release read and write only it.
 * To be removed once the longest-lived consumable record (a refresh token) written before the
 * rename has expired and no replica of that release runs.
 */
export const formerConsumedKey = (model: string, id: string): string => `${ROOT}:consumed:${model}:${id}`;
export const uidKey = (model: string, uid: string): string => `${ROOT}:uid:${model}:${uid}`;
export const userCodeKey = (model: string, code: string): string => `${ROOT}:user-code:${model}:${code}`;
export const grantKey = (grantId: string): string => `${ROOT}:grant:${grantId}`;

/** A grant index field names one record: `<Model>:<id>` (model names hold no colon). */
export const grantMember = (model: string, id: string): string => `${model}:${id}`;

export function parseGrantMember(member: string): { model: string; id: string } | undefined {
  const colon = member.indexOf(':');
  const model = member.slice(0, colon);
  if (colon < 0 || !isModelName(model)) return undefined;
  return { model, id: member.slice(colon + 1) };
}

/** An id as the backend holds it: 43 base64url characters that only svc's key can compute. */
export type IdRef = (id: string) => string;

/**
 * The refs of one server key. A rotated `server.secretkey` gives other refs, so what the
 * provider stored before is no longer found: its logins, codes and tokens end, as the sealed
 * account records (../idp/accounts.ts) already do.
 */
export function createIdRefs(serverSecretKey: string): IdRef {
  const key = secretKeyObject(hkdfSync('sha256', serverSecretKey, 'svc-idp', 'svc idp-record-id v1', 32));
  // A refresh grant asks for the ref of the same ids several times (the token at find and at
  // consume, the grant id at each record it saves, the new token at the next grant): the
  // recent ones are remembered. Only ids of the provider's own length or shorter; the memo is
  // bounded by count, so ids sent by anyone can only push others out, never grow it.
  const memo = new BoundedCache<string, string>(REMEMBERED_REFS);
  return (id) => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const computed = createHmac('sha256', key).update(id, 'utf8').digest('base64url');
    if (id.length <= REMEMBERED_ID_CHARS) memo.set(id, computed);
    return computed;
  };
}

/** Refs remembered per server key (the most recent; about 200 KB at most). */
export const REMEMBERED_REFS = 2048;
/** Ids longer than oidc-provider's (43-character nanoids, 36-character uids) are not remembered. */
const REMEMBERED_ID_CHARS = 64;
