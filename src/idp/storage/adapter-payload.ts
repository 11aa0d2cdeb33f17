/**
 * The adapter's values and their bounds. Ids, uids and user codes come from requests (a token
 * in a header, a code in a form), so a look-up with an absurd one is answered "not found"
 * without asking the backend; a payload over the size limit is refused before anything is
 * written, so one odd request cannot fill Redis.
 */
import type { AdapterPayload } from 'oidc-provider';

/**
 * Far above what an interaction of the largest authorization request taken (4 KB,
 * request-bounds.ts) makes (about 6 KB), pushed authorization requests being off; far below
 * what would hurt Redis. A Session grows by one small entry per client, so it stays well under it.
 */
export const MAX_PAYLOAD_BYTES = 32 * 1024;

/** Ids are 43-character nanoids or JWT ids; anything past this is not one of ours. */
export const MAX_ID_LENGTH = 512;

/** A payload over MAX_PAYLOAD_BYTES. The message names the model and the size, never content. */
export class IdpPayloadTooLarge extends RangeError {
  constructor(model: string, bytes: number, limit: number) {
    super(`identity provider ${model} payload of ${bytes} bytes is over the ${limit}-byte limit`);
    this.name = 'IdpPayloadTooLarge';
  }
}

export function encodePayload(model: string, payload: AdapterPayload, limit: number): string {
  const text = JSON.stringify(payload);
  const bytes = Buffer.byteLength(text);
  if (bytes > limit) throw new IdpPayloadTooLarge(model, bytes, limit);
  return text;
}

export function decodePayload(text: string): AdapterPayload {
  return JSON.parse(text) as AdapterPayload;
}

/** A non-empty string of at most MAX_ID_LENGTH characters (id, uid, user code, grant id). */
export function isLookupId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH;
}

/**
 * oidc-provider's expiresIn (seconds) as a backend TTL. A record whose time is already up
 * (0 or less: saved in the second it expires) still gets one second rather than none, which
 * would keep it forever.
 */
export function ttlMsFor(expiresIn: number | undefined): number | undefined {
  if (expiresIn === undefined) return undefined;
  if (!Number.isFinite(expiresIn)) throw new RangeError(`expiresIn must be a finite number of seconds, got ${String(expiresIn)}`);
  return Math.max(1, Math.ceil(expiresIn)) * 1000;
}

/**
 * The payload as the backend keeps it: its `jti` (the record's id: a token, a code, the session
 * cookie) sealed by `sealId`, so only svc can read it back (a record found through its uid or
 * user code must be saved again under its id), and an Interaction's copy of the session cookie
 * left out: the provider never reads it back.
 */
export function withoutBearerValues(payload: AdapterPayload, sealId: (jti: string) => string): AdapterPayload {
  const { jti, session, ...rest } = payload;
  const stored: AdapterPayload = rest;
  if (typeof jti === 'string') stored.jti = sealId(jti);
  if (session !== undefined) {
    const { cookie: _cookie, ...kept } = session;
    stored.session = kept;
  }
  return stored;
}

