/**
 * Automatic rotation of the bundled identity provider's signing key (`idp.keyRotation`): the
 * same rotation as `svc-server idp rotate-keys` (a new key published at once, signing a few
 * minutes later; the old one published until its ID tokens expire), when the newest key is a
 * period old.
 *
 * Every replica (and every worker) checks once a minute; none holds a lock of its own. The
 * decision is made again inside the store's read-modify-write of svc-secret, which the store
 * serialises across processes, so only the first replica to write rotates and the others find
 * the new key there. A state-backend lock was the alternative: it would need expiry and fencing,
 * and would still leave two writers to the Secret if it lapsed mid-write.
 *
 * A check reads the clock it is given (tests move it), not the timer's.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { AuditTrail } from '../audit/trail.js';
import type { Logger } from 'pino';
import { SETTINGS_SECRET } from '../config/manifests.js';
import type { ConfigStore } from '../config/store.js';
import { formatDuration } from '../lib/duration.js';
import { parseIdpKeys, rotateSigningKeysIf, type RotationReport, type SigningKey } from './keys.js';

/** How often each process looks whether a rotation is due: a minute late at most, one JSON parse each time. */
export const KEY_ROTATION_CHECK_MS = 60_000;

/** When the newest key was created (epoch ms); 0 without keys. */
function newestCreatedAt(keys: readonly SigningKey[]): number {
  return Math.max(0, ...keys.map((k) => Date.parse(k.createdAt)));
}

/** A rotation is due once the newest key is `periodMs` old; never with period 0 or without keys (the first start makes them). */
export function rotationDue(keys: readonly SigningKey[], periodMs: number, now: number): boolean {
  if (periodMs <= 0 || keys.length === 0) return false;
  return newestCreatedAt(keys) + periodMs <= now;
}

export interface KeyRotationDeps {
  readonly store: ConfigStore;
  /** idp.keyRotation in force now, in ms; 0: manual only. Read at every check, so a change applies live. */
  readonly periodMs: () => number;
  readonly now: () => number;
  readonly log: Logger;
  readonly registry: Registry;
  readonly checkEveryMs?: number;
  /** signing-keys-rotated, with trigger automatic (docs/audit.md). */
  readonly audit?: AuditTrail;
}

export interface KeyRotation {
  /** One check (the timer's); resolves with what it rotated, if anything. */
  check(): Promise<RotationReport | undefined>;
  close(): void;
}

export function startKeyRotation(deps: KeyRotationDeps): KeyRotation {
  const { store, log } = deps;
  const checkEveryMs = deps.checkEveryMs ?? KEY_ROTATION_CHECK_MS;
  const keysNow = (): readonly SigningKey[] => parseIdpKeys(store.current().secrets.get(SETTINGS_SECRET)?.data ?? {})?.signing ?? [];
  const rotations = new Counter({ name: 'svc_idp_key_rotations_total', help: 'Signing keys this process rotated in by idp.keyRotation (one replica rotates per period)', registers: [deps.registry] });
  const failures = new Counter({ name: 'svc_idp_key_rotation_failures_total', help: 'Automatic signing key rotations that failed (the current keys stay in force; retried every minute)', registers: [deps.registry] });
  new Gauge({
    name: 'svc_idp_signing_key_age_seconds',
    help: 'Age of the newest signing key; above idp.keyRotation plus a few minutes, rotation is not happening',
    registers: [deps.registry],
    aggregator: 'max',
    collect() {
      const newest = newestCreatedAt(safely(keysNow) ?? []);
      this.set(newest === 0 ? 0 : Math.max(0, (deps.now() - newest) / 1000));
    },
  });

  let running: Promise<RotationReport | undefined> | undefined;
  async function checkOnce(): Promise<RotationReport | undefined> {
    const periodMs = deps.periodMs();
    const now = deps.now();
    try {
      if (!rotationDue(keysNow(), periodMs, now)) return undefined;
      const report = await rotateSigningKeysIf(store, new Date(now), (stored) => rotationDue(stored, periodMs, now));
      if (report === undefined) return undefined; // another replica rotated first
      rotations.inc();
      deps.audit?.record({ category: 'configuration', type: 'change', action: 'signing-keys-rotated', outcome: 'success', svc: { trigger: 'automatic', period: formatDuration(periodMs), addedKey: report.added.kid, retiredKeys: report.retired, prunedKeys: report.pruned } });
      log.info(
        { added: report.added.kid, signsFrom: report.added.signsFrom, retired: report.retired, pruned: report.pruned, period: formatDuration(periodMs) },
        `identity provider: signing key rotated (idp.keyRotation ${formatDuration(periodMs)}); the new key signs from ${String(report.added.signsFrom)}, the old one stays published until its tokens expire`,
      );
      return report;
    } catch (err: unknown) {
      failures.inc();
      deps.audit?.record({ category: 'configuration', type: 'change', action: 'signing-keys-rotated', outcome: 'failure', reason: err instanceof Error ? err.message : String(err), svc: { trigger: 'automatic', period: formatDuration(periodMs) } });
      log.error({ err }, `identity provider: automatic signing key rotation failed; the current keys stay in force, next try in ${formatDuration(checkEveryMs)}`);
      return undefined;
    }
  }
  function check(): Promise<RotationReport | undefined> {
    // One check at a time per process: a slow store must not stack key generations.
    running ??= checkOnce().finally(() => {
      running = undefined;
    });
    return running;
  }
  const timer = setInterval(() => void check(), checkEveryMs);
  timer.unref();
  return {
    check,
    close: () => clearInterval(timer),
  };
}

function safely<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined; // unreadable keys are reported by the check and at start
  }
}
