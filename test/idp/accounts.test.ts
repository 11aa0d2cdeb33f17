import { expect } from 'chai';
import { pino } from 'pino';
import { createAccountStore } from '../../src/idp/accounts.js';
import { createMemoryState } from '../../src/state/memory.js';

describe('idp/accounts', function () {
  const identity = { userId: 'u1', username: 'U', emailVerified: false, groups: [] };

  it('keeps the identity behind a sub, and a later save never shortens its life', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const accounts = createAccountStore(state);
    await accounts.save('sub-1', { connectorId: 'dir', identity }, 1000);
    await accounts.save('sub-1', { connectorId: 'dir', identity: { ...identity, groups: ['g'] } }, 10);
    expect(await accounts.find('sub-1')).to.deep.equal({ connectorId: 'dir', identity: { ...identity, groups: ['g'] } });
    expect(await state.ttlMs('idp:account:sub-1')).to.be.above(10_000);
    expect(await accounts.find('sub-2')).to.equal(undefined);
    await state.close();
  });
});
