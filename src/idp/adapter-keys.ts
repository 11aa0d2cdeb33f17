/**
 * Where the identity provider's adapter keeps things in the state backend (bare keys; Redis
 * adds `svc:`). A record lives under its model name, CamelCase as oidc-provider names models;
 * every index lives under a lowercase word, so no id (whatever characters it holds) can make
 * a record key equal to an index key: the part before the id is fixed and differs.
 *
 *   idp:<Model>:<id>               the payload, JSON, TTL = expiresIn
 *   idp:consumed:<Model>:<id>      epoch seconds of the first consume(), TTL = the record's
 *   idp:uid:<Model>:<uid>          id of the record with that uid (Session), TTL = the record's
 *   idp:user-code:<Model>:<code>   id of the record with that userCode (DeviceCode), same TTL
 *   idp:grant:<grantId>            hash: field `<Model>:<id>` per token of the grant, value its
 *                                  expiry in ms ('never' without one); TTL = the longest member's
 */

const ROOT = 'idp';

/** oidc-provider's model names (AccessToken, Session, ...): never a lowercase index word. */
const MODEL_NAME = /^[A-Z][A-Za-z]{0,63}$/;

export function isModelName(name: string): boolean {
  return MODEL_NAME.test(name);
}

export const recordKey = (model: string, id: string): string => `${ROOT}:${model}:${id}`;
export const consumedKey = (model: string, id: string): string => `${ROOT}:consumed:${model}:${id}`;
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
