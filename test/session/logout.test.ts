/**
 * Logout by the kind of token: a session is revoked in state (the registry); an API token's
 * record is deleted from the config store, durably, and a failed delete fails the logout with
 * the reason, never a revocation in state alone answered as success (issue 52).
 */
import { expect } from 'chai';
import type { AuditSource } from '../../src/audit/trail.js';
import { InvalidRequest, NotFound, PermissionDenied, Unavailable } from '../../src/errors.js';
import type { Principal } from '../../src/principal.js';
import { createLogout, deleteCommandFor, type DeleteStoredToken } from '../../src/session/logout.js';

const SOURCE: AuditSource = { ip: '192.0.2.1' };

const session: Principal = { username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 'j-session', expiresAt: 2_000_000_000, issuedAt: 1_900_000_000 };
const apiKey: Principal = { username: 'ci', groups: [], issuer: 'svc', kind: 'apiKey', tokenId: 'j-api', apiTokenId: 'deploy', expiresAt: undefined, issuedAt: 1_900_000_000 };
const ssoApiKey: Principal = { username: 'sub-1', groups: [], issuer: 'https://svc.example/api/idp', kind: 'ssoApiKey', tokenId: 'j-sso', apiTokenId: 'b3c1', expiresAt: 2_000_000_000 };

function harness(revokeFails = false) {
  const calls: string[] = [];
  const warnings: string[] = [];
  const logout = createLogout({
    sessions: { logout: async (person, id, exp, context) => void calls.push(`session ${person.subject} ${id} ${String(exp)} ${context.via}`) },
    revocation: {
      revoke: async (jti, exp) => {
        calls.push(`revoke ${jti} ${String(exp)}`);
        if (revokeFails) throw new Unavailable('logout could not be recorded: the state backend is unreachable');
      },
    },
    log: { warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? '') },
  });
  return { logout, calls, warnings };
}

function remover(calls: string[], fails?: unknown): DeleteStoredToken {
  return async (principal, source) => {
    calls.push(`delete ${principal.kind} ${principal.username} ${principal.apiTokenId} ${String(source.ip)}`);
    if (fails !== undefined) throw fails;
  };
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err: unknown) {
    return err;
  }
  throw new Error('expected a refusal');
}

describe('session/logout', () => {
  it('a session token is revoked in state through the registry; no record is deleted', async () => {
    const { logout, calls } = harness();
    logout.deleteStoredWith('apiKey', remover(calls));
    await logout.logout(session, SOURCE);
    expect(calls).to.deep.equal(['session alice j-session 2000000000 logout']);
  });

  it('an API token: its record is deleted from the config store first, then its jti revoked in state', async () => {
    const { logout, calls } = harness();
    logout.deleteStoredWith('apiKey', remover(calls));
    logout.deleteStoredWith('ssoApiKey', remover(calls));
    await logout.logout(apiKey, SOURCE);
    await logout.logout(ssoApiKey, SOURCE);
    expect(calls).to.deep.equal([
      'delete apiKey ci deploy 192.0.2.1', 'revoke j-api undefined',
      'delete ssoApiKey sub-1 b3c1 192.0.2.1', 'revoke j-sso 2000000000',
    ]);
  });

  it('a store write that fails fails the logout, says why and names the command; nothing is revoked in state alone', async () => {
    const { logout, calls, warnings } = harness();
    logout.deleteStoredWith('apiKey', remover(calls, new Error('EACCES: permission denied, rename …')));
    const err = await refusal(logout.logout(apiKey, SOURCE));
    expect(err).to.be.instanceOf(Unavailable);
    expect((err as Error).message).to.equal("logout failed: this API token's record could not be deleted from the config store, so the token still works; try again, or delete it with 'svc account delete-token --account ci deploy'");
    expect(calls).to.deep.equal(['delete apiKey ci deploy 192.0.2.1']);
    expect(warnings).to.deep.equal(["logout: the API token's record could not be deleted from the config store; the token still works"]);
  });

  it('a refusal of the store that says why for itself is passed on as it is', async () => {
    const { logout, calls } = harness();
    const denied = new PermissionDenied("account 'ci' cannot be changed: its stored values do not parse");
    logout.deleteStoredWith('apiKey', remover(calls, denied));
    expect(await refusal(logout.logout(apiKey, SOURCE))).to.equal(denied);
    expect(calls).to.have.length(1);
  });

  it('a record already deleted (by the command, another replica) is a logout done', async () => {
    const { logout, calls } = harness();
    logout.deleteStoredWith('apiKey', remover(calls, new NotFound("token with id 'deploy' does not exist for account 'ci'")));
    await logout.logout(apiKey, SOURCE);
    expect(calls).to.deep.equal(['delete apiKey ci deploy 192.0.2.1', 'revoke j-api undefined']);
  });

  it('the record deleted but the state write failed: still a logout done (durable), with a warning', async () => {
    const { logout, calls, warnings } = harness(true);
    logout.deleteStoredWith('apiKey', remover(calls));
    await logout.logout(apiKey, SOURCE);
    expect(calls).to.deep.equal(['delete apiKey ci deploy 192.0.2.1', 'revoke j-api undefined']);
    expect(warnings).to.have.length(1);
  });

  it('without a way to delete that kind of token here, refuses the logout and names the command', async () => {
    const { logout, calls } = harness();
    const err = await refusal(logout.logout(ssoApiKey, SOURCE));
    expect(err).to.be.instanceOf(InvalidRequest);
    expect((err as Error).message).to.equal("an API token is not ended by logging out: its revocation would be kept only in the state backend, which can lose it; delete the token with 'svc account delete-token b3c1 (logged in with svc login --sso)'");
    expect(calls, 'nothing revoked in state alone').to.deep.equal([]);
    expect(deleteCommandFor({ kind: 'apiKey', username: 'ci' })).to.equal('svc account delete-token --account ci <id>');
  });
});
