/**
 * oidc.config's username mapping names a person, it does not make one (issue 54): two upstream
 * users whose `sub`s map to the same username stay two persons, each with their own sessions
 * and their own `sub` in the audit trail, against a real oidc-provider on HTTPS.
 */
import { expect } from 'chai';
import { collectAudit } from '../helpers/audit.js';
import { setupSso, ssoLogin, userInfo, type SsoSetup } from '../helpers/sso-setup.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

// Not one-to-one, as claims.email or claims.preferred_username may be upstream.
const RULES = { claimMappings: { username: { expression: 'claims.sub.split(".")[0]' } } };

describe('e2e: a mapped username is not the person key (oidc-provider)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  const audit = collectAudit();
  let setup: SsoSetup;

  before(async () => {
    setup = await setupSso({ ca: makeTestCa(), oidc: RULES, audit });
    setup.provider.accounts.set('zed.victim', { groups: [] });
    setup.provider.accounts.set('zed.attacker', { groups: [] });
  });
  after(() => setup?.close());

  const sessions = async (token: string): Promise<{ id: string; current?: boolean }[]> => {
    const res = await fetch(`${setup.svc.url}/api/v1/session/list`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).to.equal(200);
    return ((await res.json()) as { items: { id: string; current?: boolean }[] }).items;
  };

  it('keeps two users mapped to one name apart: neither sees nor ends the other\'s session, and the audit trail names each sub', async () => {
    const victim = await ssoLogin(setup, 'zed.victim');
    const attacker = await ssoLogin(setup, 'zed.attacker');
    expect(await userInfo(setup.svc.url, victim.token)).to.deep.include({ loggedIn: true, username: 'zed' });
    expect(await userInfo(setup.svc.url, attacker.token)).to.deep.include({ loggedIn: true, username: 'zed' });

    const victimSessions = await sessions(victim.token);
    const attackerSessions = await sessions(attacker.token);
    expect(victimSessions).to.have.length(1);
    expect(attackerSessions).to.have.length(1);
    const victimSession = victimSessions[0]!.id;
    expect(attackerSessions.map((s) => s.id)).to.not.include(victimSession);

    const end = await fetch(`${setup.svc.url}/api/v1/session/${victimSession}`, { method: 'DELETE', headers: { authorization: `Bearer ${attacker.token}` } });
    expect(end.status).to.equal(404);
    expect(await userInfo(setup.svc.url, victim.token)).to.deep.include({ loggedIn: true, username: 'zed' });

    const ids = audit.of('login').filter((e) => e.outcome === 'success').map((e) => e.user?.id);
    expect(ids).to.include.members(['zed.victim', 'zed.attacker']);
  });
});
