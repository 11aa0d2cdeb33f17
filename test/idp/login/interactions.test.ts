/**
 * The upstream callback of every browser connector passes the one binding check (issue 21):
 * an answer that comes back in a browser without the `svc.idp.login` cookie of the login it
 * answers is refused before the connector reads it, whether the connector is GitHub, GitLab or
 * an upstream OIDC provider (and SAML, end to end in test/e2e/idp-saml.test.ts). The connectors
 * here are stand-ins that count their calls: the check must not depend on what they do.
 */
import Koa from 'koa';
import request from 'supertest';
import { expect } from 'chai';
import { pino } from 'pino';
import type { BrowserConnector, Identity } from '../../../connectors/connector.js';
import { createAccountStore } from '../../../src/idp/storage/federated-accounts.js';
import { BINDING_COOKIE, interactionRoutes } from '../../../src/idp/login/interactions.js';
import { createLoginFlow } from '../../../src/idp/login/login-flow.js';
import { createSealer } from '../../../src/lib/sealed.js';
import { createMemoryState } from '../../../src/state/memory.js';
import { testPasswordGuard } from '../../helpers/password-guard.js';

const IDENTITY: Identity = { userId: '42', username: 'victim', emailVerified: true, groups: [] };

for (const type of ['github', 'gitlab', 'oidc']) {
  describe(`idp/interactions: a ${type} connector's callback is bound to the browser that started the login`, function () {
    const state = createMemoryState();
    after(() => state.close());
    const flow = createLoginFlow({
      state, accounts: createAccountStore(state, createSealer('interactions-test-secret-key', 'idp-account')),
      callbackUrl: 'https://svc.example.org/api/idp/callback', csrfKey: 'k', log: pino({ level: 'silent' }),
    });
    let completed = 0;
    let lastState = '';
    const connector: BrowserConnector = {
      kind: 'browser',
      begin(s) {
        lastState = s;
        return Promise.resolve({ via: 'redirect', url: `https://upstream.example.org/authorize?state=${s}` });
      },
      complete() {
        completed += 1;
        return Promise.resolve(IDENTITY);
      },
    };
    const app = new Koa();
    app.use(interactionRoutes({
      provider: () => { throw new Error('the callbacks do not need the provider'); },
      flow,
      connectors: { list: () => [{ id: type, type, name: type }], get: (id) => (id === type ? connector : undefined) },
      guard: testPasswordGuard(state),
      log: pino({ level: 'silent' }),
      sourceOf: () => '127.0.0.1',
    }).routes());
    const server = app.callback();

    /** A login started for interaction `uid`: its upstream `state` and the starting browser's binding. */
    async function started(uid: string): Promise<{ state: string; binding: string }> {
      const { binding } = await flow.begin(connector, { uid, connectorId: type, scope: 'openid', source: '127.0.0.1' });
      return { state: lastState, binding };
    }

    it('sends the upstream\'s answer on to the interaction, where it is refused without the binding and the connector never sees it', async function () {
      completed = 0;
      const { state: s } = await started('uid-a');
      const first = await request(server).get(`/api/idp/callback?code=victims-code&state=${s}`);
      expect(first.status).to.equal(303);
      expect(first.headers['location']).to.equal(`/api/idp/interaction/uid-a/callback?code=victims-code&state=${s}`);
      const refused = await request(server).get(first.headers['location'] as string);
      expect(refused.status).to.equal(400);
      expect(refused.text).to.contain('Login expired');
      expect(completed, 'the connector never read the answer').to.equal(0);
      // The state is used up: the attacker's browser cannot replay it now.
      expect((await request(server).get(first.headers['location'] as string)).status).to.equal(400);
    });

    it('refuses another login\'s binding, and an answer routed to another interaction', async function () {
      completed = 0;
      const other = await started('uid-b');
      const { state: s } = await started('uid-c');
      const withOther = await request(server).get(`/api/idp/interaction/uid-c/callback?code=x&state=${s}`).set('cookie', `${BINDING_COOKIE}=${other.binding}`);
      expect(withOther.status).to.equal(400);
      const again = await started('uid-d');
      const elsewhere = await request(server).get(`/api/idp/interaction/uid-b/callback?code=x&state=${again.state}`).set('cookie', `${BINDING_COOKIE}=${again.binding}`);
      expect(elsewhere.status).to.equal(400);
      expect(completed).to.equal(0);
    });

    it('completes the login in the browser that started it, and keeps it for that browser only', async function () {
      completed = 0;
      const { state: s, binding } = await started('uid-e');
      const ok = await request(server).get(`/api/idp/interaction/uid-e/callback?code=x&state=${s}`).set('cookie', `${BINDING_COOKIE}=${binding}`);
      expect(ok.status).to.equal(303);
      expect(ok.headers['location']).to.equal('/api/idp/interaction/uid-e/finish');
      expect(completed).to.equal(1);
      expect(await flow.takePending('uid-e', 'another-browsers-binding')).to.equal(undefined);
      const again = await started('uid-f');
      await request(server).get(`/api/idp/interaction/uid-f/callback?code=x&state=${again.state}`).set('cookie', `${BINDING_COOKIE}=${again.binding}`);
      expect((await flow.takePending('uid-f', again.binding))?.sub).to.match(/^[A-Za-z0-9_-]+$/);
    });
  });
}
