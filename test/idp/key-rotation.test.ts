/**
 * idp.keyRotation's rotation on the real directory store, two "replicas" (two stores on one
 * config dir, each with its own rotation) and a clock the test moves: once per period whoever
 * checks, the manual command's overlap, never with 0. The two servers on one Redis are in
 * test/e2e/idp-key-rotation.test.ts.
 */
import { expect } from 'chai';
import type { AuditEvent } from '../../src/audit/trail.js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Writable } from 'node:stream';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDirStore, type DirStore } from '../../src/config/dir-store.js';
import { openKubeClient } from '../../src/config/kube/kube-client.js';
import { openKubeStore } from '../../src/config/kube/kube-store.js';
import type { ConfigStore } from '../../src/config/store.js';
import { SETTINGS_SECRET } from '../../src/config/manifests.js';
import { startKeyRotation, rotationDue, type KeyRotation } from '../../src/idp/key-rotation.js';
import { ensureIdpKeys, parseIdpKeys, PUBLISH_BEFORE_SIGNING_S, type SigningKey } from '../../src/idp/keys.js';
import { assertionKeysIn, ensureAssertionKeys } from '../../src/extensions/assertion-keys.js';
import { startFakeKube } from '../helpers/fake-kube-apiserver.js';
import { secret, tempConfigDir } from '../helpers/manifests.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { validAuditEvent } from '../helpers/audit-schema.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

interface Replica {
  readonly store: DirStore;
  readonly rotation: KeyRotation;
  readonly registry: Registry;
  readonly audit: CollectedAudit;
  logs(): string;
}

async function replicas(count: number, periodMs: number, clock: { now: number }): Promise<Replica[]> {
  const dir = tempConfigDir({ 'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'k'.repeat(32) }) });
  return Promise.all(Array.from({ length: count }, async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _e, done) { lines.push(chunk.toString()); done(); } }));
    // No watching: a replica's snapshot lags the other's write, as across pods; the write decides.
    const store = await openDirStore({ dir, log, watch: false });
    const registry = new Registry();
    const audit = collectAudit();
    // A check interval longer than the test: only the test's check() calls rotate.
    const rotation = startKeyRotation({ store, periodMs: () => periodMs, now: () => clock.now, log, registry, checkEveryMs: 3_600_000, audit });
    return { store, rotation, registry, audit, logs: () => lines.join('') };
  }));
}

function storedKeys(store: ConfigStore): readonly SigningKey[] {
  return parseIdpKeys(store.current().secrets.get(SETTINGS_SECRET)?.data ?? {})?.signing ?? [];
}

async function closeAll(list: readonly Replica[]): Promise<void> {
  for (const r of list) r.rotation.close();
  await Promise.all(list.map((r) => r.store.close()));
}

describe('idp/key-rotation (idp.keyRotation)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  it('rotationDue: once the newest key is a period old; never with 0 or without keys', async () => {
    const key = { kid: 'k', createdAt: new Date(T0).toISOString(), jwk: { kty: 'RSA' as const, kid: 'k', n: 'n', e: 'e', d: 'd' } };
    expect(rotationDue([key], HOUR, T0 + HOUR - 1)).to.equal(false);
    expect(rotationDue([key], HOUR, T0 + HOUR)).to.equal(true);
    expect(rotationDue([{ ...key, createdAt: new Date(T0 + HOUR).toISOString() }, key], HOUR, T0 + HOUR + 1)).to.equal(false);
    expect(rotationDue([key], 0, T0 + 100 * HOUR)).to.equal(false);
    expect(rotationDue([], HOUR, T0)).to.equal(false);
  });

  it('two replicas checking together rotate exactly once per period, keeping the overlap of the manual command', async () => {
    const clock = { now: T0 };
    const [a, b] = await replicas(2, HOUR, clock);
    if (a === undefined || b === undefined) throw new Error('two replicas');
    try {
      // Each replica's start: the first writes the key, the second reads it back.
      const first = (await ensureIdpKeys(a.store, () => new Date(T0))).signing[0] as SigningKey;
      expect((await ensureIdpKeys(b.store, () => new Date(T0))).signing[0]?.kid).to.equal(first.kid);
      for (let period = 1; period <= 3; period++) {
        clock.now = T0 + period * HOUR + 1000;
        const reports = await Promise.all([a.rotation.check(), b.rotation.check(), a.rotation.check(), b.rotation.check()]);
        // Checks of one process share a run; what counts is how many keys were added.
        expect(new Set(reports.map((r) => r?.signing?.added.kid).filter((kid) => kid !== undefined)).size, `keys added in period ${period}`).to.equal(1);
        // Checked again within the period: nothing more.
        expect(await b.rotation.check()).to.equal(undefined);
        expect(await a.rotation.check()).to.equal(undefined);
      }
      const keys = storedKeys(a.store);
      expect(keys).to.have.length(4);
      expect(keys.map((k) => Date.parse(k.createdAt))).to.deep.equal([3, 2, 1, 0].map((p) => (p === 0 ? T0 : T0 + p * HOUR + 1000)));
      // The manual command's overlap: the new key signs 5 minutes later; the first key is still published, retired.
      expect(Date.parse(keys[0]?.signsFrom ?? '')).to.equal(T0 + 3 * HOUR + 1000 + PUBLISH_BEFORE_SIGNING_S * 1000);
      expect(keys[3]?.kid).to.equal(first.kid);
      expect(Date.parse(keys[3]?.retiredAt ?? '')).to.equal(T0 + HOUR + 1000 + PUBLISH_BEFORE_SIGNING_S * 1000);
      expect(keys.filter((k) => k.retiredAt === undefined)).to.have.length(1);
      const counts = await Promise.all([a, b].map(async (r) => (await r.registry.getSingleMetric('svc_idp_key_rotations_total')?.get())?.values[0]?.value ?? 0));
      expect(counts.reduce((x, y) => x + y, 0)).to.equal(3);
      expect(a.logs() + b.logs()).to.include('identity provider: signing key rotated (idp.keyRotation 1h)');
      // One audit event per rotation, from the replica that rotated, naming the keys by id.
      const rotated = [...a.audit.of('signing-keys-rotated'), ...b.audit.of('signing-keys-rotated')];
      expect(rotated.map((e) => e.svc?.['addedKey']).sort()).to.deep.equal(keys.slice(0, 3).map((k) => k.kid).sort());
      for (const e of rotated) expect(validAuditEvent(e)['svc']).to.deep.include({ trigger: 'automatic', period: '1h' });
    } finally {
      await closeAll([a, b]);
    }
  });

  it('with --kube, two replicas rotate once per period: the Secret\'s resourceVersion decides', async () => {
    const kube = await startFakeKube({ tls: makeTestCa() });
    const work = makeTempDir('svc-key-rotation-kube-');
    const stores: ConfigStore[] = [];
    const rotations: KeyRotation[] = [];
    try {
      writeFileSync(join(work, 'kubeconfig'), kube.kubeconfig('svc'));
      kube.store.put({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret' }, 'svc', { metadata: { name: 'svc-secret' }, data: { 'server.secretkey': Buffer.from('k'.repeat(32)).toString('base64') } });
      const log = pino({ level: 'silent' });
      const clock = { now: T0 };
      for (let i = 0; i < 2; i++) {
        const store = await openKubeStore({ client: await openKubeClient({ kubeconfig: join(work, 'kubeconfig') }), log, startTimeoutMs: 15_000 });
        stores.push(store);
        await ensureIdpKeys(store, () => new Date(T0));
        rotations.push(startKeyRotation({ store, periodMs: () => HOUR, now: () => clock.now, log, registry: new Registry(), checkEveryMs: 3_600_000 }));
      }
      for (let period = 1; period <= 2; period++) {
        clock.now = T0 + period * HOUR + 1000;
        const reports = await Promise.all(rotations.map((r) => r.check()));
        expect(reports.filter((r) => r !== undefined), `rotations in period ${period}`).to.have.length(1);
      }
      const data = kube.store.get('secrets', 'svc', 'svc-secret')?.['data'] as Record<string, string>;
      const keys = parseIdpKeys(Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()])))?.signing ?? [];
      expect(keys).to.have.length(3);
    } finally {
      for (const r of rotations) r.close();
      await Promise.all(stores.map((s) => s.close()));
      await kube.close();
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('rotates the identity assertion keys too, once per period whoever checks, with the overlap of the manual command', async () => {
    const clock = { now: T0 };
    const [a, b] = await replicas(2, HOUR, clock);
    if (a === undefined || b === undefined) throw new Error('two replicas');
    try {
      await ensureIdpKeys(a.store, () => new Date(T0));
      // The assertion keys are made later than the provider's (the extension proxy started later): their own age decides.
      const [first] = await ensureAssertionKeys(a.store, () => new Date(T0 + HOUR / 2));
      clock.now = T0 + HOUR + 1000;
      const early = await Promise.all([a.rotation.check(), b.rotation.check()]);
      expect(early.filter((r) => r?.signing !== undefined), 'signing rotations').to.have.length(1);
      expect(early.filter((r) => r?.assertion !== undefined), 'assertion keys are half a period old').to.have.length(0);
      clock.now = T0 + HOUR + HOUR / 2 + 1000;
      const reports = await Promise.all([a.rotation.check(), b.rotation.check(), a.rotation.check(), b.rotation.check()]);
      const added = new Set(reports.map((r) => r?.assertion?.added.kid).filter((kid) => kid !== undefined));
      expect(added.size, 'assertion keys added').to.equal(1);
      expect(reports.filter((r) => r?.signing !== undefined), 'no signing rotation within its period').to.have.length(0);
      // The writer's snapshot has its write (the other's may lag, as across pods).
      const writer = reports.findIndex((r) => r?.assertion !== undefined) % 2 === 0 ? a : b;
      const keys = assertionKeysIn(writer.store)();
      expect(keys.map((k) => k.kid)).to.deep.equal([[...added][0], first?.kid]);
      // The manual command's overlap: published now, signing 5 minutes later; the old key signs until then and stays published.
      const signsFrom = clock.now + PUBLISH_BEFORE_SIGNING_S * 1000;
      expect(Date.parse(keys[0]?.signsFrom ?? '')).to.equal(signsFrom);
      expect(Date.parse(keys[1]?.retiredAt ?? '')).to.equal(signsFrom);
      const counts = await Promise.all([a, b].map(async (r) => (await r.registry.getSingleMetric('svc_assertion_key_rotations_total')?.get())?.values[0]?.value ?? 0));
      expect(counts.reduce((x, y) => x + y, 0)).to.equal(1);
      expect(a.logs() + b.logs()).to.include('extension identity assertions: signing key rotated (idp.keyRotation 1h)');
      // Recorded once, by the replica that rotated, naming the keys by id only.
      const recorded = [...a.audit.of('assertion-key-rotated'), ...b.audit.of('assertion-key-rotated')];
      expect(recorded).to.have.length(1);
      expect(recorded[0]).to.deep.include({ category: 'configuration', type: 'creation', outcome: 'success' });
      expect(recorded[0]?.svc).to.deep.include({ kid: [...added][0], retired: [first?.kid], period: '1h' });
      expect(JSON.stringify(recorded)).to.not.match(/"d"|"x"|"y"/);
    } finally {
      await closeAll([a, b]);
    }
  });

  it('two replicas that both see the old assertion key rotate it once: the write decides again on the stored keys', async () => {
    const clock = { now: T0 };
    const [a, b] = await replicas(2, HOUR, clock);
    if (a === undefined || b === undefined) throw new Error('two replicas');
    try {
      // No signing keys: a signing rotation's write would reload the other replica's snapshot first.
      // Each replica's proxy start: the first writes the key, the second reads it back, so both find a rotation due.
      const [first] = await ensureAssertionKeys(a.store, () => new Date(T0));
      expect((await ensureAssertionKeys(b.store, () => new Date(T0))).map((k) => k.kid)).to.deep.equal([first?.kid]);
      clock.now = T0 + HOUR + 1000;
      const reports = await Promise.all([a.rotation.check(), b.rotation.check()]);
      expect(reports.filter((r) => r?.assertion !== undefined), 'assertion rotations').to.have.length(1);
      // Read from the file, not from either snapshot (the one that did not write lags).
      const dir = a.store.dir;
      const reader = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
      try {
        const stored = assertionKeysIn(reader)();
        expect(stored.map((k) => k.kid)).to.deep.equal([reports.find((r) => r?.assertion !== undefined)?.assertion?.added.kid, first?.kid]);
      } finally {
        await reader.close();
      }
      const counts = await Promise.all([a, b].map(async (r) => (await r.registry.getSingleMetric('svc_assertion_key_rotations_total')?.get())?.values[0]?.value ?? 0));
      expect(counts.reduce((x, y) => x + y, 0)).to.equal(1);
    } finally {
      await closeAll([a, b]);
    }
  });

  it('without assertion keys (no extension proxy has started) rotates the signing keys only and writes none', async () => {
    const clock = { now: T0 };
    const [a] = await replicas(1, HOUR, clock);
    if (a === undefined) throw new Error('one replica');
    try {
      await ensureIdpKeys(a.store, () => new Date(T0));
      clock.now = T0 + 2 * HOUR;
      const report = await a.rotation.check();
      expect(report?.signing).to.not.equal(undefined);
      expect(report?.assertion).to.equal(undefined);
      expect(Object.keys(a.store.current().secrets.get(SETTINGS_SECRET)?.data ?? {})).to.not.include('assertion.signingKeys');
    } finally {
      await closeAll([a]);
    }
  });

  it('0 never rotates, however old the key', async () => {
    const clock = { now: T0 };
    const [a] = await replicas(1, 0, clock);
    if (a === undefined) throw new Error('one replica');
    try {
      const before = await ensureIdpKeys(a.store, () => new Date(T0));
      clock.now = T0 + 10 * 365 * 24 * HOUR;
      expect(await a.rotation.check()).to.equal(undefined);
      expect(storedKeys(a.store)).to.deep.equal(before.signing);
    } finally {
      await closeAll([a]);
    }
  });

  it('a rotation that cannot be written is logged and counted, and the keys in force stay', async () => {
    const clock = { now: T0 };
    const [a] = await replicas(1, HOUR, clock);
    if (a === undefined) throw new Error('one replica');
    const before = await ensureIdpKeys(a.store, () => new Date(T0));
    a.rotation.close();
    await a.store.close(); // every write now fails
    clock.now = T0 + 2 * HOUR;
    expect(await a.rotation.check()).to.equal(undefined);
    expect(a.logs()).to.include('identity provider: automatic signing key rotation failed; the current keys stay in force, next try in 1h');
    expect((await a.registry.getSingleMetric('svc_idp_key_rotation_failures_total')?.get())?.values[0]?.value).to.equal(1);
    expect(storedKeys(a.store)).to.deep.equal(before.signing);
    const [failed] = a.audit.of('signing-keys-rotated');
    expect(failed).to.deep.include({ outcome: 'failure', svc: { trigger: 'automatic', period: '1h' } });
    validAuditEvent(failed as AuditEvent);
  });

  it('an assertion key rotation that cannot be written is logged, counted and recorded as a failure, the keys in force kept', async () => {
    const clock = { now: T0 };
    const [a] = await replicas(1, HOUR, clock);
    if (a === undefined) throw new Error('one replica');
    const before = await ensureAssertionKeys(a.store, () => new Date(T0));
    a.rotation.close();
    await a.store.close(); // every write now fails
    clock.now = T0 + 2 * HOUR;
    expect(await a.rotation.check()).to.equal(undefined);
    expect(a.logs()).to.include('extension identity assertions: automatic key rotation failed; the current keys stay in force, next try in 1h');
    expect((await a.registry.getSingleMetric('svc_idp_key_rotation_failures_total')?.get())?.values[0]?.value).to.equal(1);
    expect(a.audit.of('assertion-key-rotated')).to.deep.equal([{ category: 'configuration', type: 'creation', action: 'assertion-key-rotated', outcome: 'failure', reason: 'the rotated keys could not be written to svc-secret; the current keys stay in force' }]);
    expect(assertionKeysIn(a.store)().map((k) => k.kid)).to.deep.equal(before.map((k) => k.kid));
  });
});
