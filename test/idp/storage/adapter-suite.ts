/**
 * What oidc-provider needs from its storage adapter, run against the adapter over each state
 * backend (adapter.test.ts: memory, and a real Redis). Every test uses its own ids, so a shared
 * Redis needs no flush. "Replicas" are two adapter classes over two clients of one backend.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AdapterConstructor, AdapterPayload } from 'oidc-provider';
import { createStateAdapterClass, type StateAdapterOptions } from '../../../src/idp/storage/adapter.js';
import { IdpPayloadTooLarge, MAX_ID_LENGTH, MAX_PAYLOAD_BYTES } from '../../../src/idp/storage/adapter-payload.js';
import { consumedKey, createIdRefs, formerConsumedKey, recordKey } from '../../../src/idp/storage/adapter-keys.js';
import { GrantIndexFull } from '../../../src/idp/storage/grant-index.js';
import { asSessionRekey } from '../../../src/idp/storage/session-rekey.js';
import { KEY_PREFIX, type StateBackend } from '../../../src/state/state.js';

const SECRET = 'adapter-suite-server-secret-key';
/** An id as the backend's keys hold it. */
const ref = createIdRefs(SECRET);

export interface AdapterSuiteFactory {
  /** A client of the backend; every client opened in one test sees the same data. */
  open(): Promise<StateBackend>;
  /** Every raw key with its value (a hash's fields and values joined), when the backend has such a notion (Redis). */
  rawEntries?(): Promise<(readonly [string, string])[]>;
}

/** What a rejected promise rejected with (fails the test if it resolved). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  const result = await promise.then(() => undefined, (err: unknown) => err);
  expect(result, 'expected a rejection').to.be.instanceOf(Error);
  return result as Error;
}

export function runAdapterSuite(name: string, factory: AdapterSuiteFactory): void {
  describe(`idp adapter over state: ${name}`, function () {
    let opened: StateBackend[] = [];
    let ns = '';
    let state: StateBackend;
    let Adapter: AdapterConstructor;
    /** Ids unique to this test. */
    const id = (k: string) => `${k}-${ns}`;

    async function open(): Promise<StateBackend> {
      const s = await factory.open();
      opened.push(s);
      return s;
    }

    async function replica(options: Partial<StateAdapterOptions> = {}): Promise<AdapterConstructor> {
      return createStateAdapterClass(await open(), { serverSecretKey: SECRET, ...options });
    }

    beforeEach(async function () {
      ns = randomUUID();
      state = await open();
      Adapter = createStateAdapterClass(state, { serverSecretKey: SECRET });
    });

    afterEach(async function () {
      await Promise.all(opened.map((s) => s.close()));
      opened = [];
    });

    describe('upsert and find', function () {
      it('finds what was stored, per model, and nothing else', async function () {
        const tokens = new Adapter('AccessToken');
        const payload = { jti: id('at'), kind: 'AccessToken', accountId: 'alice', scope: 'openid', exp: 1 };
        await tokens.upsert(id('at'), payload, 60);
        expect(await tokens.find(id('at'))).to.deep.equal(payload);
        expect(await tokens.find(id('other'))).to.equal(undefined);
        expect(await new Adapter('RefreshToken').find(id('at'))).to.equal(undefined);
        const replaced = { ...payload, scope: 'openid email' };
        await tokens.upsert(id('at'), replaced, 60);
        expect(await tokens.find(id('at'))).to.deep.equal(replaced);
      });

      it('keeps a record for expiresIn seconds', async function () {
        await new Adapter('AuthorizationCode').upsert(id('c'), { jti: id('c') }, 600);
        expect(await state.ttlMs(`idp:AuthorizationCode:${ref(id('c'))}`)).to.be.a('number').within(590_000, 600_000);
        await new Adapter('Client').upsert(id('forever'), { client_id: id('forever') });
        expect(await state.ttlMs(`idp:Client:${ref(id('forever'))}`)).to.equal(null);
        expect(await new Adapter('Client').find(id('forever'))).to.deep.equal({ client_id: id('forever') });
      });

      it('forgets a record, and its uid and user-code indexes, once expiresIn has passed', async function () {
        this.timeout(5_000);
        await new Adapter('Session').upsert(id('s'), { jti: id('s'), uid: id('uid') }, 1);
        await new Adapter('DeviceCode').upsert(id('d'), { jti: id('d'), userCode: id('UC') }, 1);
        expect(await new Adapter('Session').findByUid(id('uid'))).to.include({ jti: id('s') });
        await sleep(1_300);
        expect(await new Adapter('Session').find(id('s'))).to.equal(undefined);
        expect(await new Adapter('Session').findByUid(id('uid'))).to.equal(undefined);
        expect(await new Adapter('DeviceCode').findByUserCode(id('UC'))).to.equal(undefined);
        expect(await state.get(`idp:uid:Session:${ref(id('uid'))}`)).to.equal(null);
        expect(await state.get(`idp:user-code:DeviceCode:${ref(id('UC'))}`)).to.equal(null);
      });
    });

    describe('findByUid and findByUserCode', function () {
      it('finds a session and an interaction by uid, and a device code by user code', async function () {
        const session = { jti: id('s'), uid: id('su'), accountId: 'alice' };
        const interaction = { jti: id('i'), uid: id('iu'), returnTo: '/api/idp/auth/x' };
        const device = { jti: id('d'), userCode: id('ABCD'), grantId: id('g') };
        await new Adapter('Session').upsert(id('s'), session, 60);
        await new Adapter('Interaction').upsert(id('i'), interaction, 60);
        await new Adapter('DeviceCode').upsert(id('d'), device, 60);
        expect(await new Adapter('Session').findByUid(id('su'))).to.deep.equal(session);
        expect(await new Adapter('Interaction').findByUid(id('iu'))).to.deep.equal(interaction);
        expect(await new Adapter('DeviceCode').findByUserCode(id('ABCD'))).to.deep.equal(device);
        expect(await new Adapter('Session').findByUid(id('iu'))).to.equal(undefined);
        expect(await new Adapter('Session').findByUid(id('nope'))).to.equal(undefined);
        expect(await new Adapter('DeviceCode').findByUserCode(id('nope'))).to.equal(undefined);
      });

      it('does not find a session by a uid it no longer has', async function () {
        const sessions = new Adapter('Session');
        await sessions.upsert(id('s'), { jti: id('s'), uid: id('old') }, 60);
        await sessions.upsert(id('s'), { jti: id('s'), uid: id('new') }, 60);
        expect(await sessions.findByUid(id('old'))).to.equal(undefined);
        expect(await sessions.findByUid(id('new'))).to.deep.equal({ jti: id('s'), uid: id('new') });
      });
    });

    describe('consume', function () {
      it('marks the record consumed at the current time, and the mark survives a new upsert', async function () {
        const now = 1_700_000_000_500;
        const codes = new (createStateAdapterClass(state, { serverSecretKey: SECRET, now: () => now }))('AuthorizationCode');
        await codes.upsert(id('c'), { jti: id('c'), grantId: id('g') }, 60);
        expect(await codes.find(id('c'))).not.to.have.property('consumed');
        await codes.consume(id('c'));
        expect(await codes.find(id('c'))).to.deep.equal({ jti: id('c'), grantId: id('g'), consumed: 1_700_000_000 });
        await codes.upsert(id('c'), { jti: id('c'), grantId: id('g') }, 600);
        expect(await codes.find(id('c'))).to.have.property('consumed', 1_700_000_000);
        expect(await state.ttlMs(consumedKey('AuthorizationCode', ref(id('c'))))).to.be.a('number').above(590_000);
        expect(await state.ttlMs(formerConsumedKey('AuthorizationCode', ref(id('c'))))).to.be.a('number').above(590_000);
      });

      it('lets exactly one of two replicas consume a code; the other gets invalid_grant', async function () {
        const [A, B] = [await replica(), await replica()];
        for (let round = 0; round < 10; round++) {
          const code = id(`c${round}`);
          await new A('AuthorizationCode').upsert(code, { jti: code }, 60);
          const results = await Promise.allSettled([
            new A('AuthorizationCode').consume(code), new B('AuthorizationCode').consume(code),
          ]);
          expect(results.filter((r) => r.status === 'fulfilled'), `round ${round}`).to.have.length(1);
          const lost = results.find((r) => r.status === 'rejected');
          expect((lost?.reason as { error?: string }).error).to.equal('invalid_grant');
          expect(await new B('AuthorizationCode').find(code)).to.have.property('consumed').that.is.a('number');
        }
      });

      it('answers a second consume of a pushed request with invalid_request_uri', async function () {
        const par = new Adapter('PushedAuthorizationRequest');
        await par.upsert(id('p'), { jti: id('p') }, 60);
        await par.consume(id('p'));
        expect((await rejection(par.consume(id('p'))) as Error & { error?: string }).error).to.equal('invalid_request_uri');
      });

      it('refuses to consume a model oidc-provider never consumes; such a record is read and saved without a mark', async function () {
        const grants = new Adapter('Grant');
        await grants.upsert(id('g'), { jti: id('g'), accountId: 'a' }, 60);
        expect((await rejection(grants.consume(id('g')))).message).to.equal('identity provider Grant records are never consumed');
        const reads: string[] = [];
        const counting = new Proxy(state, {
          get(target, key, receiver) {
            const value = Reflect.get(target, key, receiver) as unknown;
            if (typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              reads.push(`${String(key)} ${String(args[0])}`);
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        });
        const Counted = createStateAdapterClass(counting, { serverSecretKey: SECRET });
        expect(await new Counted('Grant').find(id('g'))).to.deep.equal({ jti: id('g'), accountId: 'a' });
        expect(reads).to.deep.equal([`get idp:Grant:${ref(id('g'))}`]);
        reads.length = 0;
        await new Counted('RefreshToken').find(id('r'));
        expect(reads).to.have.members([`get idp:RefreshToken:${ref(id('r'))}`, `get ${consumedKey('RefreshToken', ref(id('r')))}`, `get ${formerConsumedKey('RefreshToken', ref(id('r')))}`]);
      });

      it('does nothing for an absent record, which stays absent', async function () {
        const codes = new Adapter('AuthorizationCode');
        await codes.consume(id('none'));
        expect(await codes.find(id('none'))).to.equal(undefined);
        expect(await state.get(consumedKey('AuthorizationCode', ref(id('none'))))).to.equal(null);
        expect(await state.get(formerConsumedKey('AuthorizationCode', ref(id('none'))))).to.equal(null);
      });

      it('keeps the mark in its record\'s Cluster slot: the record\'s stored key is its hash tag', function () {
        expect(consumedKey('RefreshToken', 'abc')).to.equal(`idp:consumed:{${KEY_PREFIX}idp:RefreshToken:abc}`);
      });

      it('counts a mark of the earlier name as consumed: a token consumed before the rename is refused', async function () {
        const tokens = new Adapter('RefreshToken');
        await tokens.upsert(id('r'), { jti: id('r') }, 600);
        // What an earlier release stored on consume: the mark under its earlier name only.
        await state.set(formerConsumedKey('RefreshToken', ref(id('r'))), '1700000000', { ttlMs: 600_000 });
        expect(await tokens.find(id('r'))).to.have.property('consumed', 1_700_000_000);
        expect(((await rejection(tokens.consume(id('r')))) as { error?: string }).error).to.equal('invalid_grant');
      });

      it('lets exactly one of a replica of the earlier release and this one consume, and shows its mark to the earlier one', async function () {
        const tokens = new Adapter('RefreshToken');
        for (let round = 0; round < 10; round++) {
          const token = id(`r${round}`);
          await tokens.upsert(token, { jti: token }, 600);
          // The earlier release's consume comes down to SET NX of the earlier name.
          const earlier = state.setIfAbsent(formerConsumedKey('RefreshToken', ref(token)), '1', { ttlMs: 600_000 }).then((won) => {
            if (!won) throw new Error('already consumed');
          });
          const results = await Promise.allSettled([earlier, tokens.consume(token)]);
          expect(results.filter((r) => r.status === 'fulfilled'), `round ${round}`).to.have.length(1);
          expect(await tokens.find(token)).to.have.property('consumed');
        }
        await tokens.upsert(id('later'), { jti: id('later') }, 600);
        await tokens.consume(id('later'));
        expect(await state.setIfAbsent(formerConsumedKey('RefreshToken', ref(id('later'))), '1'), 'the earlier name is taken too').to.equal(false);
        expect(await state.ttlMs(formerConsumedKey('RefreshToken', ref(id('later'))))).to.be.a('number').within(1, 600_000);
        expect(await state.ttlMs(recordKey('RefreshToken', ref(id('later'))))).to.be.a('number').within(1, 600_000);
      });
    });

    describe('destroy', function () {
      it('removes the record, its consumed mark, its indexes and its grant listing', async function () {
        const devices = new Adapter('DeviceCode');
        await devices.upsert(id('d'), { jti: id('d'), userCode: id('UC'), grantId: id('g') }, 60);
        await new Adapter('AccessToken').upsert(id('at'), { jti: id('at'), grantId: id('g') }, 60);
        await devices.consume(id('d'));
        await devices.destroy(id('d'));
        await devices.destroy(id('d'));
        expect(await devices.find(id('d'))).to.equal(undefined);
        expect(await devices.findByUserCode(id('UC'))).to.equal(undefined);
        expect(await state.get(consumedKey('DeviceCode', ref(id('d'))))).to.equal(null);
        expect(await state.get(formerConsumedKey('DeviceCode', ref(id('d'))))).to.equal(null);
        expect(await state.get(`idp:user-code:DeviceCode:${ref(id('UC'))}`)).to.equal(null);
        expect(Object.keys(await state.hashGetAll(`idp:grant:${ref(id('g'))}`))).to.deep.equal([`AccessToken:${ref(id('at'))}`]);
        const sessions = new Adapter('Session');
        await sessions.upsert(id('s'), { jti: id('s'), uid: id('su') }, 60);
        await sessions.destroy(id('s'));
        expect(await sessions.findByUid(id('su'))).to.equal(undefined);
        expect(await state.get(`idp:uid:Session:${ref(id('su'))}`)).to.equal(null);
      });
    });

    describe('which removals wait for a replica', function () {
      /** The adapter over `state`, recording whether each take asked to be replicated, by key. */
      function recordingTakes(): { Adapter: AdapterConstructor; replicated: Map<string, boolean> } {
        const replicated = new Map<string, boolean>();
        const recording = new Proxy(state, {
          get(target, prop, receiver) {
            if (prop !== 'take') return Reflect.get(target, prop, receiver) as unknown;
            return (key: string, options?: { replicated?: boolean }) => {
              replicated.set(key, options?.replicated === true);
              return target.take(key, options);
            };
          },
        });
        return { Adapter: createStateAdapterClass(recording, { serverSecretKey: SECRET }), replicated };
      }

      it('a logout (a logged-in session) and a revoked token do; an interaction, a session nobody logged in to or a re-keyed session\'s old id do not', async function () {
        const { Adapter: Recorded, replicated } = recordingTakes();
        const record = async (model: string, key: string, payload: AdapterPayload) => {
          const adapter = new Recorded(model);
          await adapter.upsert(id(key), { jti: id(key), ...payload }, 60);
          await adapter.destroy(id(key));
          return replicated.get(recordKey(model, ref(id(key))));
        };
        expect(await record('Session', 'in', { accountId: 'alice' }), 'a logged-in session').to.equal(true);
        expect(await record('RefreshToken', 'rt', { grantId: id('g') }), 'a refresh token').to.equal(true);
        expect(await record('Session', 'pre', {}), 'a session before its login').to.equal(false);
        expect(await asSessionRekey(() => record('Session', 'rekeyed', { accountId: 'alice' })), 'a logged-in session re-keyed at a login step').to.equal(false);
        expect(await record('Session', 'after', { accountId: 'alice' }), 'a logged-in session after a re-key elsewhere').to.equal(true);
        expect(await record('Interaction', 'i', {}), 'an interaction').to.equal(false);
      });
    });

    describe('revokeByGrantId', function () {
      it('removes every token of the grant, of every model, and nothing of other grants', async function () {
        const g = id('g');
        await new Adapter('AccessToken').upsert(id('at1'), { jti: id('at1'), grantId: g }, 3600);
        await new Adapter('AccessToken').upsert(id('at2'), { jti: id('at2'), grantId: g }, 3600);
        await new Adapter('RefreshToken').upsert(id('rt'), { jti: id('rt'), grantId: g }, 86_400);
        await new Adapter('AuthorizationCode').upsert(id('c'), { jti: id('c'), grantId: g }, 60);
        await new Adapter('AuthorizationCode').consume(id('c'));
        await new Adapter('DeviceCode').upsert(id('d'), { jti: id('d'), grantId: g, userCode: id('UC') }, 600);
        await new Adapter('AccessToken').upsert(id('keep'), { jti: id('keep'), grantId: id('other') }, 3600);
        await new Adapter('Grant').upsert(g, { jti: g, accountId: 'alice' }, 86_400);

        await new Adapter('RefreshToken').revokeByGrantId(g);

        for (const [model, tokenId] of [['AccessToken', 'at1'], ['AccessToken', 'at2'], ['RefreshToken', 'rt'],
          ['AuthorizationCode', 'c'], ['DeviceCode', 'd']] as const) {
          expect(await new Adapter(model).find(id(tokenId)), `${model} ${tokenId}`).to.equal(undefined);
        }
        expect(await new Adapter('DeviceCode').findByUserCode(id('UC'))).to.equal(undefined);
        expect(await state.get(consumedKey('AuthorizationCode', ref(id('c'))))).to.equal(null);
        expect(await state.get(formerConsumedKey('AuthorizationCode', ref(id('c'))))).to.equal(null);
        expect(await state.hashLength(`idp:grant:${ref(g)}`)).to.equal(0);
        expect(await new Adapter('AccessToken').find(id('keep'))).to.include({ grantId: id('other') });
        // The Grant itself is the provider's to destroy (revokeGrantPolicy), not the token index's.
        expect(await new Adapter('Grant').find(g)).to.include({ accountId: 'alice' });
        await new Adapter('AccessToken').revokeByGrantId(id('never-issued'));
      });

      it('keeps the grant index as long as its longest-lived token', async function () {
        const key = `idp:grant:${ref(id('g'))}`;
        await new Adapter('AccessToken').upsert(id('at'), { jti: id('at'), grantId: id('g') }, 60);
        expect(await state.ttlMs(key)).to.be.a('number').within(50_000, 60_000);
        await new Adapter('RefreshToken').upsert(id('rt'), { jti: id('rt'), grantId: id('g') }, 86_400);
        await new Adapter('AccessToken').upsert(id('at2'), { jti: id('at2'), grantId: id('g') }, 60);
        expect(await state.ttlMs(key)).to.be.a('number').above(86_000_000);
        // Sessions and interactions carry grant ids too, but are not tokens of the grant.
        await new Adapter('Interaction').upsert(id('i'), { jti: id('i'), grantId: id('g') }, 60);
        expect(await state.hashLength(key)).to.equal(3);
      });

      it('holds the bound exactly when tokens of one grant are saved at once', async function () {
        const tokens = new (createStateAdapterClass(state, { serverSecretKey: SECRET, maxGrantMembers: 3 }))('AccessToken');
        const saves = await Promise.allSettled([1, 2, 3, 4, 5, 6, 7, 8].map((n) => tokens.upsert(id(`c${n}`), { jti: id(`c${n}`), grantId: id('cg') }, 60)));
        expect(saves.filter((r) => r.status === 'fulfilled')).to.have.length(3);
        expect(saves.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).to.satisfy((errs: unknown[]) => errs.every((e) => e instanceof GrantIndexFull));
        expect(await state.hashLength(`idp:grant:${ref(id('cg'))}`)).to.equal(3);
      });

      it('refuses a token past the bound of live tokens per grant, and makes room as they expire', async function () {
        let now = Date.now();
        const tokens = new (createStateAdapterClass(state, { serverSecretKey: SECRET, now: () => now, maxGrantMembers: 3 }))('AccessToken');
        for (const n of [1, 2, 3]) await tokens.upsert(id(`at${n}`), { jti: id(`at${n}`), grantId: id('g') }, 60);
        const err = await rejection(tokens.upsert(id('at4'), { jti: id('at4'), grantId: id('g') }, 60));
        expect(err).to.be.instanceOf(GrantIndexFull);
        expect(err.message).to.equal('a grant has 3 unexpired tokens already; refusing to issue more');
        expect(await tokens.find(id('at4')), 'a refused token is not written').to.equal(undefined);
        await tokens.upsert(id('at3'), { jti: id('at3'), grantId: id('g') }, 60);   // listed already: saved again, not refused
        now += 61_000; // the three listed tokens are past their expiry by the index's clock
        await tokens.upsert(id('at4'), { jti: id('at4'), grantId: id('g') }, 60);
        expect(Object.keys(await state.hashGetAll(`idp:grant:${ref(id('g'))}`))).to.deep.equal([`AccessToken:${ref(id('at4'))}`]);
      });
    });

    describe('bounds', function () {
      it('refuses a payload over the size limit and writes nothing', async function () {
        const sessions = new Adapter('Session');
        const big = { jti: id('s'), uid: id('su'), accountId: 'x'.repeat(MAX_PAYLOAD_BYTES) };
        const err = await rejection(sessions.upsert(id('s'), big, 60));
        expect(err).to.be.instanceOf(IdpPayloadTooLarge);
        expect(err.message).to.match(/^identity provider Session payload of \d+ bytes is over the 32768-byte limit$/);
        expect(err.message).not.to.include('xxxx');
        expect(await sessions.find(id('s'))).to.equal(undefined);
        expect(await sessions.findByUid(id('su'))).to.equal(undefined);
        await sessions.upsert(id('s'), { ...big, accountId: 'x'.repeat(MAX_PAYLOAD_BYTES - 200) }, 60);
      });

      it('answers look-ups with an absurd id as not found, and refuses to store under one', async function () {
        const tokens = new Adapter('RefreshToken');
        const long = 'a'.repeat(MAX_ID_LENGTH + 1);
        expect(await tokens.find(long)).to.equal(undefined);
        expect(await tokens.find('')).to.equal(undefined);
        expect(await tokens.findByUid(long)).to.equal(undefined);
        expect(await tokens.findByUserCode(long)).to.equal(undefined);
        await tokens.consume(long);
        await tokens.destroy(long);
        await tokens.revokeByGrantId(long);
        expect(await rejection(tokens.upsert(long, { jti: long }, 60))).to.be.instanceOf(RangeError);
      });

      it('accepts only model names, which can never collide with an index', function () {
        for (const bad of ['uid', 'grant', 'consumed', 'Access:Token', '']) {
          expect(() => new Adapter(bad), bad).to.throw(TypeError);
        }
      });

      it('keeps ids with colons apart from index keys', async function () {
        const tokens = new Adapter('RefreshToken');
        await tokens.upsert('consumed:x', { jti: 'consumed:x' }, 60);
        await tokens.upsert(id('x'), { jti: id('x') }, 60);
        await tokens.consume(id('x'));
        expect(await tokens.find('consumed:x')).to.deep.equal({ jti: 'consumed:x' });
        await tokens.destroy('consumed:x');
      });
    });

    describe('two replicas sharing the backend', function () {
      it('see each other\'s sessions, codes, consumption, destruction and revocations', async function () {
        const [A, B] = [await replica(), await replica()];
        await new A('Session').upsert(id('s'), { jti: id('s'), uid: id('su'), accountId: 'alice' }, 60);
        expect(await new B('Session').findByUid(id('su'))).to.include({ accountId: 'alice' });
        await new A('AuthorizationCode').upsert(id('c'), { jti: id('c'), grantId: id('g') }, 60);
        await new B('AuthorizationCode').consume(id('c'));
        expect(await new A('AuthorizationCode').find(id('c'))).to.have.property('consumed');
        await new A('RefreshToken').upsert(id('rt'), { jti: id('rt'), grantId: id('g') }, 600);
        await new B('AccessToken').upsert(id('at'), { jti: id('at'), grantId: id('g') }, 60);
        await new B('RefreshToken').revokeByGrantId(id('g'));
        expect(await new A('RefreshToken').find(id('rt'))).to.equal(undefined);
        expect(await new A('AccessToken').find(id('at'))).to.equal(undefined);
        await new B('Session').destroy(id('s'));
        expect(await new A('Session').findByUid(id('su'))).to.equal(undefined);
      });
    });

    describe('what the backend holds', function () {
      it('finds records by id, uid and user code while keeping no id in clear (sealed jti, refs in keys)', async function () {
        const device: AdapterPayload = { jti: id('device-code'), kind: 'DeviceCode', uid: id('du'), userCode: id('UC'), grantId: id('g') };
        await new Adapter('DeviceCode').upsert(id('device-code'), device, 60);
        const session: AdapterPayload = { jti: id('session-cookie'), uid: id('su'), accountId: 'alice' };
        await new Adapter('Session').upsert(id('session-cookie'), session, 60);
        await new Adapter('Interaction').upsert(id('i'), { jti: id('i'), uid: id('i'), session: { uid: id('su'), cookie: id('session-cookie'), accountId: 'alice' } }, 60);
        for (const stored of [
          await state.get(`idp:DeviceCode:${ref(id('device-code'))}`), await state.get(`idp:Session:${ref(id('session-cookie'))}`),
          await state.get(`idp:Interaction:${ref(id('i'))}`),
        ]) {
          expect(stored).to.be.a('string').and.not.include(id('device-code')).and.not.include(id('session-cookie'));
        }
        expect(await new Adapter('DeviceCode').find(id('device-code'))).to.deep.equal(device);
        expect(await new Adapter('DeviceCode').findByUserCode(id('UC'))).to.deep.equal(device);
        expect(await new Adapter('Session').findByUid(id('su'))).to.deep.equal(session);
        // The interaction's copy of the session cookie is not kept (the provider never reads it).
        expect(await new Adapter('Interaction').find(id('i'))).to.deep.equal({ jti: id('i'), uid: id('i'), session: { uid: id('su'), accountId: 'alice' } });
      });

      it('finds nothing when a record is copied under another id, or read with another server key', async function () {
        const tokens = new Adapter('RefreshToken');
        await tokens.upsert(id('victim'), { jti: id('victim'), accountId: 'victim', grantId: id('gv') }, 60);
        await tokens.upsert(id('mine'), { jti: id('mine'), accountId: 'attacker', grantId: id('gm') }, 60);
        await state.set(`idp:RefreshToken:${ref(id('mine'))}`, (await state.get(`idp:RefreshToken:${ref(id('victim'))}`)) as string);
        expect(await tokens.find(id('mine'))).to.equal(undefined);
        expect(await tokens.find(id('victim'))).to.include({ accountId: 'victim' });
        const otherKey = createStateAdapterClass(state, { serverSecretKey: 'another-server-secret-key' });
        expect(await new otherKey('RefreshToken').find(id('victim'))).to.equal(undefined);
      });
    });

    if (factory.rawEntries !== undefined) {
      const rawEntries = factory.rawEntries.bind(factory);
      it(`stores every key under ${KEY_PREFIX}idp:, and no token value in any key or value`, async function () {
        const payload: AdapterPayload = { jti: id('d'), uid: id('u'), userCode: id('UC'), grantId: id('g') };
        await new Adapter('DeviceCode').upsert(id('d'), payload, 60);
        await new Adapter('DeviceCode').consume(id('d'));
        await new Adapter('AccessToken').upsert(id('access'), { jti: id('access'), grantId: id('g'), accountId: 'alice' }, 60);
        await new Adapter('RefreshToken').upsert(id('refresh'), { jti: id('refresh'), grantId: id('g'), accountId: 'alice' }, 60);
        const expected = [
          `idp:DeviceCode:${ref(id('d'))}`, consumedKey('DeviceCode', ref(id('d'))), formerConsumedKey('DeviceCode', ref(id('d'))), `idp:grant:${ref(id('g'))}`,
          `idp:uid:DeviceCode:${ref(id('u'))}`, `idp:user-code:DeviceCode:${ref(id('UC'))}`,
          `idp:AccessToken:${ref(id('access'))}`, `idp:RefreshToken:${ref(id('refresh'))}`,
        ].map((k) => KEY_PREFIX + k);
        const entries = await rawEntries();
        expect(entries.map(([k]) => k)).to.include.members(expected);
        for (const [key, value] of entries) {
          for (const secret of [id('d'), id('access'), id('refresh')]) {
            expect(key, key).to.not.include(secret);
            expect(value, key).to.not.include(secret);
          }
        }
      });
    }
  });
}
