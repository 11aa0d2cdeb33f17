import { expect } from 'chai';
import { pino } from 'pino';
import { createAccountStore, EXTENSION_SLACK_MS } from '../../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../../src/lib/sealed.js';
import { createMemoryState } from '../../../src/state/memory.js';
import { createRedisState } from '../../../src/state/redis.js';
import { startRedis, type RedisPeer } from '../../helpers/peers.js';

describe('idp/accounts', function () {
  const identity = { userId: 'u1', username: 'U', email: 'u1@example.org', emailVerified: false, groups: [] };
  const sealer = createSealer('accounts-test-secret-key', 'idp-account');

  it('keeps the identity behind a sub, and a later save never shortens its life', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const accounts = createAccountStore(state, sealer);
    await accounts.save('sub-1', { connectorId: 'dir', identity }, 1000);
    await accounts.save('sub-1', { connectorId: 'dir', identity: { ...identity, groups: ['g'] } }, 10);
    expect(await accounts.find('sub-1')).to.deep.equal({ connectorId: 'dir', identity: { ...identity, groups: ['g'] } });
    expect(await state.ttlMs('idp:account:sub-1')).to.be.above(10_000);
    expect(await accounts.find('sub-2')).to.equal(undefined);
    await state.close();
  });

  it('after a refresh, rewrites only a changed identity, and keeps either alive for the new refresh token', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const accounts = createAccountStore(state, sealer);
    const before = { connectorId: 'dir', identity };
    await accounts.save('sub-1', before, 10);
    const sealed = await state.get('idp:account:sub-1');
    await accounts.update('sub-1', before, { connectorId: 'dir', identity: { ...identity } }, 1000);
    expect(await state.get('idp:account:sub-1'), 'the same identity is not sealed and written again').to.equal(sealed);
    expect(await state.ttlMs('idp:account:sub-1')).to.be.above(10_000);

    const changed = { connectorId: 'dir', identity: { ...identity, groups: ['admins'] } };
    await accounts.update('sub-1', before, changed, 1000);
    expect(await accounts.find('sub-1')).to.deep.equal(changed);

    await state.delete('idp:account:sub-1');
    await accounts.update('sub-1', changed, changed, 1000);
    expect(await accounts.find('sub-1'), 'a record gone meanwhile is written again').to.deep.equal(changed);
    expect(await state.ttlMs('idp:account:sub-1')).to.be.above(10_000);
    await state.close();
  });

  it('extends an unchanged account an hour beyond what a refresh needs, so the next refreshes leave it alone', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const extended: number[] = [];
    const counting = { ...state, expire: (key: string, ttlMs: number) => (extended.push(ttlMs), state.expire(key, ttlMs)) };
    const accounts = createAccountStore(counting, sealer);
    const account = { connectorId: 'dir', identity };
    await accounts.save('sub-1', account, 100);
    for (let i = 0; i < 3; i++) await accounts.update('sub-1', account, { connectorId: 'dir', identity: { ...identity } }, 1000);
    expect(extended).to.deep.equal([1000 * 1000 + EXTENSION_SLACK_MS]);
    expect(await state.ttlMs('idp:account:sub-1')).to.be.above(1000 * 1000);
    await state.close();
  });

  it('keeps the record sealed in the state backend: no upstream token or email in clear, and another key opens nothing', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const kept = { ...identity, connectorData: JSON.stringify({ refreshToken: 'upstream-refresh-token-xyz' }) };
    await createAccountStore(state, sealer).save('sub-1', { connectorId: 'oidc', identity: kept }, 60);
    const stored = (await state.get('idp:account:sub-1')) ?? '';
    expect(stored).not.to.contain('upstream-refresh-token-xyz').and.not.to.contain('u1@example.org');
    expect(await createAccountStore(state, createSealer('another-secret-key', 'idp-account')).find('sub-1')).to.equal(undefined);
    expect(await createAccountStore(state, createSealer('accounts-test-secret-key', 'refresh-token')).find('sub-1')).to.equal(undefined);
    await state.set('idp:account:sub-2', JSON.stringify({ connectorId: 'oidc', identity: kept }), { ttlMs: 60_000 });
    expect(await createAccountStore(state, sealer).find('sub-2'), 'a record written in clear is not taken').to.equal(undefined);
    expect((await createAccountStore(state, sealer).find('sub-1'))?.identity.connectorData).to.equal(kept.connectorData);
    await state.close();
  });
});

describe('idp/accounts: a record sealed for one sub does not open under another', function () {
  const log = pino({ level: 'silent' });
  const sealer = createSealer('accounts-test-secret-key', 'idp-account');
  const identity = (userId: string) => ({ userId, username: userId, email: `${userId}@example.org`, emailVerified: true, groups: userId === 'root' ? ['admins'] : [] });
  let redis: RedisPeer;
  before(async function () {
    redis = await startRedis();
  });
  after(async function () {
    await redis?.stop();
  });

  for (const [name, open] of [
    ['memory', () => createMemoryState({ log })],
    ['redis', () => createRedisState({ url: redis.url, log })],
  ] as const) {
    it(`on ${name}: the victim's record copied under the attacker's sub is no account`, async function () {
      const state = open();
      const accounts = createAccountStore(state, sealer);
      await accounts.save('sub-root', { connectorId: 'dir', identity: identity('root') }, 60);
      await accounts.save('sub-mallory', { connectorId: 'dir', identity: identity('mallory') }, 60);
      await state.set('idp:account:sub-mallory', (await state.get('idp:account:sub-root')) as string);
      expect(await accounts.find('sub-mallory')).to.equal(undefined);
      expect(await accounts.find('sub-root')).to.deep.include({ connectorId: 'dir' });
      await state.close();
    });
  }
});
