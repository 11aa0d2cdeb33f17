/** What each accepted request writes to the session registry: at most once a minute per session. */
import { expect } from 'chai';
import { pino } from 'pino';
import { personKey } from '../../src/person.js';
import { parseTrustedProxies } from '../../src/http/client-address.js';
import { createSessionUsage } from '../../src/main/session-usage.js';
import type { Principal } from '../../src/principal.js';
import type { NewSession } from '../../src/session/registry.js';

describe('session usage', function () {
  const principal = (over: Partial<Principal> = {}): Principal => ({ username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 'j1', expiresAt: 2_000_000_000, ...over });

  function setUp() {
    let clock = Date.parse('2026-03-01T10:00:10Z');
    const recorded: NewSession[] = [];
    const touched: [string, string, number][] = [];
    const use = createSessionUsage({
      registry: {
        recordIfAbsent: async (s) => void recorded.push(s),
        touch: async (person, id, minute) => void touched.push([personKey(person), id, minute]),
      },
      trustedProxies: parseTrustedProxies('10.0.0.1'),
      log: pino({ level: 'silent' }),
      now: () => clock,
    });
    return { use, recorded, touched, advance: (ms: number) => (clock += ms) };
  }
  const settle = () => new Promise((r) => setImmediate(r));

  it('records a session the first time it is seen, from the request, then writes its minute once a minute', async function () {
    const { use, recorded, touched, advance } = setUp();
    const request = { headers: { 'user-agent': 'svc/1.0.0', 'x-forwarded-for': '203.0.113.5' }, socket: { remoteAddress: '10.0.0.1' } };
    use(principal(), request, 'bearer');
    use(principal(), request, 'bearer');
    await settle();
    expect(recorded).to.deep.equal([{ id: 'j1', account: 'alice', kind: 'local', expiresAt: 2_000_000_000, issuer: 'svc', client: 'cli', address: '203.0.113.5' }]);
    expect(touched).to.deep.equal([['local:svc:alice', 'j1', Date.parse('2026-03-01T10:00:00Z')]]);
    advance(30_000);
    use(principal(), request, 'bearer');
    advance(30_000);
    use(principal(), request, 'bearer');
    await settle();
    expect(recorded).to.have.length(1);
    expect(touched.map((t) => t[2])).to.deep.equal([Date.parse('2026-03-01T10:00:00Z'), Date.parse('2026-03-01T10:01:00Z')]);
  });

  it('takes a cookie as a browser, an SSO token as sso, and leaves API tokens out', async function () {
    const { use, recorded } = setUp();
    use(principal({ kind: 'sso', tokenId: 's1', issuer: 'https://idp' }), { headers: {} }, 'cookie');
    use(principal({ kind: 'apiKey', tokenId: 'k1' }), { headers: {} }, 'bearer');
    use(principal({ kind: 'workload', tokenId: 'w1' }), { headers: { 'user-agent': 'curl/8' } }, 'bearer');
    await settle();
    expect(recorded.map((r) => [r.id, r.kind, r.client])).to.deep.equal([['s1', 'sso', 'browser'], ['w1', 'workload', 'api']]);
  });

  it('records an SSO token\'s provider sid with its session (ending it then reaches the provider\'s grant)', async function () {
    const { use, recorded } = setUp();
    use(principal({ kind: 'sso', tokenId: 's1', issuer: 'https://idp', sid: 'sid-1' }), { headers: { 'user-agent': 'svc/1.0.0' } }, 'bearer');
    use(principal({ kind: 'sso', tokenId: 's2', issuer: 'https://idp' }), { headers: { 'user-agent': 'svc/1.0.0' } }, 'bearer');
    await settle();
    expect(recorded.map((r) => [r.id, r.client, r.sid])).to.deep.equal([['s1', 'cli', 'sid-1'], ['s2', 'cli', undefined]]);
    expect(recorded[1]).to.not.have.property('sid');
  });
});
