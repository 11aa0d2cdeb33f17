/**
 * A TOTP code is accepted once: the last accepted time step of each account is kept in the
 * state backend (shared by replicas), and a code of that step or an earlier one is refused.
 * The read-compare-write runs under a short per-account lock (SET NX with a TTL), so two
 * replicas checking codes of one account at once cannot both accept (the state backend has no
 * compare-and-set). The mark lives only as long as a code of its step could still be accepted.
 *
 * The mark lives in state, which can be lost (memory state at every start; Redis emptied): a
 * code used just before would be accepted again (issue 52, review finding 3). So a code whose
 * step begins at or before the marker of the record of revocations (revocations-epoch.ts: when
 * the state svc keeps began, kept in the same backend and lost with it) is refused too, with the
 * clock margin on a shared backend: after a loss, the user waits for the next step's code, at
 * most one period. No marker (the state lost, and no replica wrote a new one yet): every step
 * begun by now is refused.
 *
 * Keys (the backend adds `svc:`):
 *   mfa-totp-last:<name>   the last accepted step, TTL MARK_TTL_MS
 *   mfa-totp-lock:<name>   held while one check runs, TTL LOCK_TTL_MS
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TooManyRequests } from '../errors.js';
import { MARKER_FIELD, REVOKED_HASH } from '../session/revocation.js';
import { CLOCK_SKEW_MS, parseMarker } from '../session/revocations-epoch.js';
import type { StateBackend } from '../state/state.js';
import { TOTP_PERIOD_SECONDS, TOTP_SKEW_STEPS } from './totp.js';

const LAST_PREFIX = 'mfa-totp-last:';
const LOCK_PREFIX = 'mfa-totp-lock:';
/** A step's code is accepted until the step after the skew ends: at most (2 + skew) periods from its start. */
const MARK_TTL_MS = (2 + TOTP_SKEW_STEPS) * TOTP_PERIOD_SECONDS * 1000 + 30_000;
const LOCK_TTL_MS = 5_000;
const LOCK_TRIES = 20;
const LOCK_POLL_MS = 50;

/**
 * The time (ms) at or before which a step's code is refused because the record of used steps
 * may have been lost then: the marker's time (and the clock margin on a shared backend), or
 * `nowMs` when there is no readable marker.
 */
export async function stepsLostUntil(state: StateBackend, nowMs: number): Promise<number> {
  const text = await state.hashGet(REVOKED_HASH, MARKER_FIELD);
  const marker = text === null ? undefined : parseMarker(text);
  if (marker === undefined) return nowMs;
  return marker.atMs + (state.kind === 'memory' ? 0 : CLOCK_SKEW_MS);
}

/**
 * True when `step` is newer than the account's last accepted step, which it then becomes, and,
 * given `nowMs`, its code was first accepted (TOTP_SKEW_STEPS before the step begins) after the
 * record of used steps began (stepsLostUntil). The enrolment's
 * confirmation gives none: its secret is new, so no code of it was used before a loss, and an
 * enrolment right after a start is not made to wait a step.
 */
export async function claimTotpStep(state: StateBackend, name: string, step: number, nowMs?: number): Promise<boolean> {
  // A code is accepted from the start of the step `TOTP_SKEW_STEPS` before its own (an
  // authenticator whose clock is ahead), so a code of a step not yet begun may have been used
  // before the loss too: judged by when it was first accepted, not by when its step begins.
  if (nowMs !== undefined && (step - TOTP_SKEW_STEPS) * TOTP_PERIOD_SECONDS * 1000 <= (await stepsLostUntil(state, nowMs))) return false;
  const lock = LOCK_PREFIX + name;
  const mine = randomUUID();
  await acquire(state, lock, mine);
  try {
    const last = await state.get(LAST_PREFIX + name);
    if (last !== null && Number(last) >= step) return false;
    await state.set(LAST_PREFIX + name, String(step), { ttlMs: MARK_TTL_MS });
    return true;
  } finally {
    // Only our own lock: one that expired under a stalled check and was taken by another stays its.
    if ((await state.get(lock)) === mine) await state.delete(lock);
  }
}

async function acquire(state: StateBackend, lock: string, mine: string): Promise<void> {
  for (let i = 0; i < LOCK_TRIES; i++) {
    if (await state.setIfAbsent(lock, mine, { ttlMs: LOCK_TTL_MS })) return;
    await sleep(LOCK_POLL_MS);
  }
  throw new TooManyRequests('another second-factor check of this account is in progress; try again');
}
