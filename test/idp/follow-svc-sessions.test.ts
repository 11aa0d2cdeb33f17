/**
 * The svc sessions that came from the bundled provider take what is behind them along when they
 * end (src/idp/follow-svc-sessions.ts): on a real session registry (memory state), with the
 * provider's side recorded. A command-line session ended by the per-account bound reaches the
 * provider by its `sid` (its grant revoked there), and svc's other sessions of the same `sid`
 * (the CLI's earlier or later ID tokens) end with it; the ends that came from the provider, and a
 * logout (which goes on to the provider's own end-session page), do not go back to it.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { ssoPerson } from '../../src/person.js';
import { followSvcSessions } from '../../src/idp/follow-svc-sessions.js';
import type { ProviderEndOutcome } from '../../src/idp/session-end.js';
import { createSessionRegistry, type NewSession, type SessionRegistry } from '../../src/session/registry.js';
import { createRevocation, type Revocation } from '../../src/session/revocation.js';
import { createMemoryState } from '../../src/state/memory.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';

const log = pino({ level: 'silent' });
const ISSUER = 'https://svc.example.org/api/idp';
const EXP = Math.floor(Date.now() / 1000) + 3600;

describe('idp/follow-svc-sessions', function () {
  let registry: SessionRegistry;
  let revocation: Revocation;
  let audit: CollectedAudit;
  let asked: [string, string][];
  let stop: () => void;
  let clock: number;

  beforeEach(async function () {
    const state = createMemoryState({ log });
    clock = Date.now();
    const now = () => clock++;
    audit = collectAudit();
    revocation = await createRevocation({ state, log, now });
    registry = createSessionRegistry({ state, revocation, audit, log, now, maxPerAccount: 2 });
    asked = [];
    const sessionEnd = {
      async endBySvcSid(sid: string, account: string): Promise<ProviderEndOutcome> {
        asked.push([sid, account]);
        return { outcome: 'grant-revoked', sids: [sid] };
      },
    };
    stop = followSvcSessions({ sessions: registry, sessionEnd, issuer: ISSUER, log });
  });

  afterEach(async function () {
    stop();
    await revocation.close();
  });

  const session = (id: string, sid: string | undefined, issuer = ISSUER): NewSession =>
    ({ id, account: 'alice', kind: 'sso', client: 'cli', address: '', expiresAt: EXP, issuer, ...(sid !== undefined ? { sid } : {}) });

  it('a CLI session ended by the bound revokes its grant by sid, and its other ID tokens\' sessions end too', async function () {
    await registry.record(session('cli-1', 'cli-sid'));
    await registry.record(session('cli-2', 'cli-sid'));
    await registry.record(session('web-1', 'web-sid'));

    expect(asked).to.deep.equal([['cli-sid', 'alice']]);
    expect((await registry.list(ssoPerson(ISSUER, 'alice'))).map((s) => s.record.id)).to.deep.equal(['web-1']);
    expect(await revocation.isRevoked('cli-2')).to.equal(true);
    expect(audit.of('session-ended').map((e) => [e.svc?.['sessionId'], e.svc?.['via']])).to.deep.equal([['cli-1', 'bound'], ['cli-2', 'provider']]);
  });

  it('does not go back to the provider for a logout, a back-channel end, another issuer or a session without sid', async function () {
    await registry.record(session('a', 'sid-a'));
    await registry.logout(ssoPerson(ISSUER, 'alice'), 'a', EXP, { via: 'logout' });
    await registry.record(session('b', 'sid-b'));
    await registry.endBySid(ISSUER, 'sid-b', { via: 'backchannel' });
    await registry.record(session('c', 'sid-c', 'https://other.example.org'));
    await registry.end(ssoPerson('https://other.example.org', 'alice'), 'c', { via: 'list' });
    await registry.record(session('d', undefined));
    await registry.end(ssoPerson(ISSUER, 'alice'), 'd', { via: 'list' });
    expect(asked).to.deep.equal([]);
  });
});
