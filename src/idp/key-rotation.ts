/**
 * Automatic rotation of the keys svc signs with (`idp.keyRotation`): the same rotation as
 * `svc-server idp rotate-keys` (a new key published at once, signing a few minutes later; the old
 * one published until what it signed expires), for the bundled identity provider's signing keys
 * and for the extension identity assertion keys, each when its newest key is a period old. Both,
 * as the command does both: an operator who set a period must not find one set of keys signing
 * for ever. Each set is decided on its own (its newest key's age), so a failure of one leaves
 * the other rotating.
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
import type { Logger } from 'pino';
import { NO_AUDIT, type AuditTrail } from '../audit/trail.js';
import { SETTINGS_SECRET } from '../config/manifests.js';
import type { ConfigStore } from '../config/store.js';
import { ASSERTION_KEYS_KEY, parseAssertionKeys, rotateAssertionKeysIf, type AssertionKey } from '../extensions/assertion-keys.js';
import { formatDuration } from '../lib/duration.js';
import { parseIdpKeys, rotateSigningKeysIf, type RotationReport, type SigningKey } from './keys.js';

/** How often each process looks whether a rotation is due: a minute late at most, one JSON parse each time. */
export const KEY_ROTATION_CHECK_MS = 60_000;

/** What the schedule reads of a key, of either set. */
interface Dated {
  readonly createdAt: string;
}

/** When the newest key was created (epoch ms); 0 without keys. */
function newestCreatedAt(keys: readonly Dated[]): number {
  return Math.max(0, ...keys.map((k) => Date.parse(k.createdAt)));
}

/** A rotation is due once the newest key is `periodMs` old; never with period 0 or without keys (the first start makes them). */
export function rotationDue(keys: readonly Dated[], periodMs: number, now: number): boolean {
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
  /** Where automatic rotations are recorded (docs/audit.md: signing-keys-rotated, assertion-key-rotated); none by default. */
  readonly audit?: AuditTrail;
}

/** What one check rotated: either set, both, or (undefined) neither. */
export interface KeyRotationReport {
  readonly signing?: RotationReport;
  readonly assertion?: RotationReport<AssertionKey>;
}

export interface KeyRotation {
  /** One check (the timer's); resolves with what it rotated, if anything. */
  check(): Promise<KeyRotationReport | undefined>;
  close(): void;
}

export function startKeyRotation(deps: KeyRotationDeps): KeyRotation {
  const { store, log } = deps;
  const checkEveryMs = deps.checkEveryMs ?? KEY_ROTATION_CHECK_MS;
  const audit = deps.audit ?? NO_AUDIT;
  const secret = (): Readonly<Record<string, string>> => store.current().secrets.get(SETTINGS_SECRET)?.data ?? {};
  const keysNow = (): readonly SigningKey[] => parseIdpKeys(secret())?.signing ?? [];
  // Absent until the extension proxy first starts (it writes the first key): nothing to rotate then.
  const assertionKeysNow = (): readonly AssertionKey[] => parseAssertionKeys(secret()[ASSERTION_KEYS_KEY]) ?? [];
  const rotations = new Counter({ name: 'svc_idp_key_rotations_total', help: 'Signing keys this process rotated in by idp.keyRotation (one replica rotates per period)', registers: [deps.registry] });
  const assertionRotations = new Counter({ name: 'svc_assertion_key_rotations_total', help: 'Extension identity assertion keys this process rotated in by idp.keyRotation (one replica rotates per period)', registers: [deps.registry] });
  const failures = new Counter({ name: 'svc_idp_key_rotation_failures_total', help: 'Automatic key rotations (signing or identity assertion keys) that failed (the current keys stay in force; retried every minute)', registers: [deps.registry] });
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

  async function rotateSigning(periodMs: number, now: number): Promise<RotationReport | undefined> {
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

  async function rotateAssertion(periodMs: number, now: number): Promise<RotationReport<AssertionKey> | undefined> {
    try {
      if (!rotationDue(assertionKeysNow(), periodMs, now)) return undefined;
      const report = await rotateAssertionKeysIf(store, new Date(now), (stored) => rotationDue(stored, periodMs, now));
      if (report === undefined) return undefined; // another replica rotated first
      assertionRotations.inc();
      audit.record({
        category: 'configuration', type: 'creation', action: 'assertion-key-rotated', outcome: 'success',
        svc: { kid: report.added.kid, signsFrom: report.added.signsFrom, retired: report.retired, pruned: report.pruned, period: formatDuration(periodMs) },
      });
      log.info(
        { added: report.added.kid, signsFrom: report.added.signsFrom, retired: report.retired, pruned: report.pruned, period: formatDuration(periodMs) },
        `extension identity assertions: signing key rotated (idp.keyRotation ${formatDuration(periodMs)}); the new key signs from ${String(report.added.signsFrom)}, the old one stays published at /.well-known/svc/jwks.json until its assertions expire`,
      );
      return report;
    } catch (err: unknown) {
      failures.inc();
      audit.record({ category: 'configuration', type: 'creation', action: 'assertion-key-rotated', outcome: 'failure', reason: 'the rotated keys could not be written to svc-secret; the current keys stay in force' });
      log.error({ err }, `extension identity assertions: automatic key rotation failed; the current keys stay in force, next try in ${formatDuration(checkEveryMs)}`);
      return undefined;
    }
  }

  let running: Promise<KeyRotationReport | undefined> | undefined;
  async function checkOnce(): Promise<KeyRotationReport | undefined> {
    const periodMs = deps.periodMs();
    const now = deps.now();
    // One after the other: both are read-modify-writes of the same Secret.
    const signing = await rotateSigning(periodMs, now);
    const assertion = await rotateAssertion(periodMs, now);
    if (signing === undefined && assertion === undefined) return undefined;
    return { ...(signing !== undefined ? { signing } : {}), ...(assertion !== undefined ? { assertion } : {}) };
  }
  function check(): Promise<KeyRotationReport | undefined> {
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
