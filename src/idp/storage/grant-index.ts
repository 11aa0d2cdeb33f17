/**
 * Which tokens belong to a grant, so that revoking the grant (logout, a reused code or refresh
 * token) removes every one of them, on whichever replica they were issued. One hash per grant
 * (adapter-keys.ts); each field's value is the member's expiry, because Redis 7.0 has no
 * per-field TTL: the hash itself lives as long as its longest-lived member (hashSet's
 * extendTtlMs), and expired fields are pruned when the hash reaches its bound.
 *
 * The bound: a client that refreshes over and over adds a refresh and an access token each
 * time, and the consumed ones stay listed until they expire. Past MAX_GRANT_MEMBERS live
 * members the next token is refused (GrantIndexFull) rather than left unlisted, which would
 * let it survive a revocation. The bound is checked in the same atomic step as the listing
 * (hashSet's maxFields), so tokens saved at once, on one replica or several, cannot pass it.
 */
import type { StateBackend } from '../../state/state.js';
import { grantKey } from './adapter-keys.js';

export const MAX_GRANT_MEMBERS = 1_000;

const NEVER = 'never';

export class GrantIndexFull extends RangeError {
  constructor(limit: number) {
    super(`a grant has ${limit} unexpired tokens already; refusing to issue more`);
    this.name = 'GrantIndexFull';
  }
}

export interface GrantIndexOptions {
  readonly state: StateBackend;
  readonly now: () => number;
  readonly maxMembers: number;
}

export interface GrantIndex {
  /** Lists a member that expires in ttlMs (undefined: never); call BEFORE writing the member. */
  add(grantId: string, member: string, ttlMs: number | undefined): Promise<void>;
  remove(grantId: string, member: string): Promise<void>;
  /** Every member listed now, expired ones included (their records are gone or going). */
  members(grantId: string): Promise<string[]>;
  /** Unlists these members; members added since they were read stay listed. */
  forget(grantId: string, members: readonly string[]): Promise<void>;
}

export function createGrantIndex({ state, now, maxMembers }: GrantIndexOptions): GrantIndex {
  /** Drops expired fields once the hash is full; true when there is room after that. */
  async function makeRoom(key: string): Promise<boolean> {
    if ((await state.hashLength(key)) < maxMembers) return true;
    const t = now();
    const fields = await state.hashGetAll(key);
    const expired = Object.keys(fields).filter((f) => fields[f] !== NEVER && Number(fields[f]) <= t);
    if (expired.length > 0) await state.hashDelete(key, ...expired);
    return Object.keys(fields).length - expired.length < maxMembers;
  }

  return {
    async add(grantId, member, ttlMs) {
      const key = grantKey(grantId);
      const expiry = ttlMs === undefined ? NEVER : String(now() + ttlMs);
      const options = { maxFields: maxMembers, ...(ttlMs === undefined ? {} : { extendTtlMs: ttlMs }) };
      // One round trip while there is room; once full, the expired members go and it is tried again.
      if (await state.hashSet(key, member, expiry, options)) return;
      if (!(await makeRoom(key)) || !(await state.hashSet(key, member, expiry, options))) throw new GrantIndexFull(maxMembers);
    },

    async remove(grantId, member) {
      await state.hashDelete(grantKey(grantId), member);
    },

    async members(grantId) {
      return Object.keys(await state.hashGetAll(grantKey(grantId)));
    },

    async forget(grantId, members) {
      if (members.length > 0) await state.hashDelete(grantKey(grantId), ...members);
    },
  };
}
