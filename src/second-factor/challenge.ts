/**
 * The single-use challenge between a login's password step and its second step. Kept in the
 * state backend (every replica sees it), at most CHALLENGE_TTL_MS, bound to the account and to
 * the password hash the first step checked (as its `pwh` binding: a password changed meanwhile
 * voids it), and taken atomically (GETDEL): of two uses, from any replicas, one gets it.
 *
 * Key (the backend adds `svc:`): mfa-challenge:<id>, TTL CHALLENGE_TTL_MS.
 */
import { randomBytes } from 'node:crypto';
import type { StateBackend } from '../state/state.js';

export const CHALLENGE_TTL_MS = 5 * 60_000;
const PREFIX = 'mfa-challenge:';
/** 32 random bytes, base64url. */
const ID = /^[A-Za-z0-9_-]{43}$/;

export interface ChallengeRecord {
  readonly username: string;
  /** passwordBinding() of the hash the password step matched. */
  readonly pwh: string;
}

export async function createChallenge(state: StateBackend, record: ChallengeRecord): Promise<string> {
  const id = randomBytes(32).toString('base64url');
  await state.set(PREFIX + id, JSON.stringify(record), { ttlMs: CHALLENGE_TTL_MS });
  return id;
}

/** The challenge's record, removed; undefined when unknown, used or expired. */
export async function takeChallenge(state: StateBackend, id: string): Promise<ChallengeRecord | undefined> {
  if (!ID.test(id)) return undefined;
  return parseRecord(await state.take(PREFIX + id));
}

/** The record without using the challenge up (passkey options are asked for before the answer). */
export async function peekChallenge(state: StateBackend, id: string): Promise<ChallengeRecord | undefined> {
  if (!ID.test(id)) return undefined;
  return parseRecord(await state.get(PREFIX + id));
}

function parseRecord(text: string | null): ChallengeRecord | undefined {
  if (text === null) return undefined;
  try {
    const raw = JSON.parse(text) as Partial<ChallengeRecord>;
    return typeof raw.username === 'string' && typeof raw.pwh === 'string' ? { username: raw.username, pwh: raw.pwh } : undefined;
  } catch {
    return undefined;
  }
}
