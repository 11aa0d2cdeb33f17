/** /readyz's state check: reported, never failing readiness, and never quoting the backend's error to anyone. */
import { expect } from 'chai';
import { createReadiness } from '../../src/main/readiness.js';
import type { Services } from '../../src/main/services.js';

function services(ping: () => Promise<void>): Pick<Services, 'settings' | 'state' | 'store'> {
  return {
    settings: { current: () => ({ serverSecretKey: 'k' }), problems: () => [] },
    store: {},
    state: { kind: 'redis', connection: () => ({ connected: true }), ping },
  } as unknown as Pick<Services, 'settings' | 'state' | 'store'>;
}

describe('readiness: the state backend', () => {
  it('is ok when the backend answers its ping', async () => {
    const answer = await createReadiness(services(async () => undefined))();
    expect(answer).to.deep.equal({ ready: true, checks: { configuration: 'ok', store: 'ok', state: 'ok' } });
  });

  it('says degraded without the error, which names an address and a user, and stays ready', async () => {
    const failing = services(async () => {
      throw new Error('WRONGPASS invalid username-password pair or user is disabled (user svc-secret-user at 10.7.3.9:6379)');
    });
    const answer = await createReadiness(failing)();
    expect(answer.ready).to.equal(true);
    expect(answer.checks.state).to.equal('degraded: the redis state backend does not answer a ping');
    expect(JSON.stringify(answer)).to.not.match(/10\.7\.3\.9|svc-secret-user|WRONGPASS/);
  });
});
