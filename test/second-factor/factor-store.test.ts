/**
 * A recovery code is used up inside the store's serialised read-modify-write of svc-secret
 * (src/second-factor/factor-store.ts): of concurrent uses of one code, on one replica or on two
 * over one config dir, exactly one is accepted, whatever the settings each replica last read.
 * The real directory store; the code checked as the login checks it (codes.ts).
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { AccountSettings } from '../../src/accounts/account.js';
import { parseSecondFactor } from '../../src/accounts/second-factor-config.js';
import { openDirStore, type DirStore } from '../../src/config/dir-store.js';
import { SETTINGS_SECRET } from '../../src/config/manifests.js';
import { ProblemSink } from '../../src/config/problems.js';
import { checkCode, secondFactorKeysFrom } from '../../src/second-factor/codes.js';
import { createFactorStore } from '../../src/second-factor/factor-store.js';
import { newRecoveryCodes, recoveryCodeHasher } from '../../src/second-factor/recovery-codes.js';
import { createMemoryState } from '../../src/state/memory.js';
import { accountsConfigDir, SECRET_KEY } from '../helpers/accounts-fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const hasher = recoveryCodeHasher(SECRET_KEY);

describe('second-factor/factor-store', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let codes: string[];
  let dir: string;
  const stores: DirStore[] = [];

  beforeEach(function () {
    codes = newRecoveryCodes();
    // alice with a TOTP factor (its sealed text is never opened here) and ten recovery codes.
    dir = accountsConfigDir({ secret: { 'mfa.alice.totp': 'sealed', 'mfa.alice.recoveryCodes': JSON.stringify(codes.map(hasher)) } });
  });
  afterEach(async function () {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  /** A replica's store: no watching, so its snapshot lags the other's writes, as across pods. */
  async function replica(): Promise<DirStore> {
    const store = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
    stores.push(store);
    return store;
  }

  /** alice as a replica's settings last read her: her factor from its snapshot of svc-secret. */
  const aliceIn = (store: DirStore): AccountSettings => {
    const sink = new ProblemSink();
    const secondFactor = parseSecondFactor('alice', store.current().secrets.get(SETTINGS_SECRET)?.data ?? {}, sink.scoped(SETTINGS_SECRET));
    expect(sink.problems).to.deep.equal([]);
    return { name: 'alice', enabled: true, capabilities: ['login'], tokens: [], ...(secondFactor !== undefined ? { secondFactor } : {}) };
  };
  /** The codes left in the file, read by a store of its own. */
  const storedHashes = async (): Promise<string[]> => {
    const reader = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
    try {
      return JSON.parse(reader.current().secrets.get(SETTINGS_SECRET)?.data['mfa.alice.recoveryCodes'] ?? '[]') as string[];
    } finally {
      await reader.close();
    }
  };

  it('uses a code once: of concurrent uses on one replica, exactly one is accepted, and a later one is refused', async function () {
    const factors = createFactorStore(await replica());
    const hash = hasher(codes[0] as string);
    const used = await Promise.all(Array.from({ length: 5 }, () => factors.useRecoveryCode('alice', hash)));
    expect(used.filter((u) => u)).to.have.length(1);
    expect(await factors.useRecoveryCode('alice', hash), 'used again later').to.equal(false);
    expect(await storedHashes()).to.deep.equal(codes.slice(1).map(hasher));
  });

  it('of two concurrent logins with one code on two replicas, each still listing it, exactly one is accepted', async function () {
    const [a, b] = [await replica(), await replica()];
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    try {
      const keys = secondFactorKeysFrom(() => SECRET_KEY);
      const check = (store: DirStore) => checkCode({ state, factors: createFactorStore(store), keys, now: Date.now }, aliceIn(store), codes[1] as string);
      expect(aliceIn(a).secondFactor?.recoveryHashes).to.include(hasher(codes[1] as string));
      const answers = await Promise.all([check(a), check(b), check(a), check(b)]);
      expect(answers.filter((f) => f === 'recovery'), `answers: ${answers.join(',')}`).to.have.length(1);
      expect(answers.filter((f) => f === undefined)).to.have.length(3);
      expect(await storedHashes()).to.deep.equal(codes.filter((_, i) => i !== 1).map(hasher));
      // The replica that did not write still lists the code in its snapshot: the write refuses it.
      const stale = a.current().secrets.get(SETTINGS_SECRET)?.data['mfa.alice.recoveryCodes'] === JSON.stringify(codes.map(hasher)) ? a : b;
      expect(await checkCode({ state, factors: createFactorStore(stale), keys, now: Date.now }, aliceIn(stale), codes[1] as string)).to.equal(undefined);
    } finally {
      await state.close();
    }
  });
});
