/** The extension proxy (HTTP): the checks in DESIGN §6 order, and the backend chosen per cluster. */
import { expect } from 'chai';
import type { Echo } from './helpers.js';
import { call, useProxyFixture } from './proxy-fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('extension proxy: the checks and the backend per cluster', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  useProxyFixture();

  describe('checks, in order', () => {
    it('404 for an unknown or disabled extension, before authentication', async () => {
      const unknown = await call('/api/v1/extensions/nope/x', undefined);
      expect(unknown.status).to.equal(404);
      expect(unknown.json()).to.deep.equal({ error: 'extension_not_found', message: "extension 'nope' is not configured" });
      const off = await call('/api/v1/extensions/off', 'admin');
      expect(off.status).to.equal(404);
      expect(off.json()).to.deep.equal({ error: 'extension_not_found', message: "extension 'off' is not enabled" });
    });

    it('401 without a valid token', async () => {
      expect((await call('/api/v1/extensions/echo', undefined)).status).to.equal(401);
      const bad = await call('/api/v1/extensions/echo', undefined, { authorization: 'Bearer not-a-token' });
      expect(bad.status).to.equal(401);
      expect(bad.json()['error']).to.equal('unauthenticated');
    });

    it('400 for a malformed application header, 403 for an unknown application', async () => {
      for (const name of ['no-slash', 'argocd/a..b', 'argocd/a.-b', 'argocd/-a', 'Argocd/a', `${'n'.repeat(64)}/a`]) {
        const bad = await call('/api/v1/extensions/echo', 'alice', { 'svc-application-name': name });
        expect(bad.status, name).to.equal(400);
        expect(bad.json()['error'], name).to.equal('invalid_request');
      }
      const missing = await call('/api/v1/extensions/echo', 'alice', { 'svc-application-name': 'argocd/ghost' });
      expect(missing.status).to.equal(403);
      expect(missing.json()).to.deep.equal({ error: 'application_not_found', message: "application 'argocd/ghost' does not exist" });
    });

    it("403 naming the missing rule; the project comes from the application", async () => {
      const other = await call('/api/v1/extensions/echo', 'alice', { 'svc-application-name': 'argocd/app-c' });
      expect(other.status).to.equal(403);
      expect(other.json()).to.deep.equal({
        error: 'permission_denied',
        message: "'alice' may not use extension 'echo' with GET: no rights rule allows extensions, *, team-c/echo nor extensions, get, team-c/echo",
      });
      expect((await call('/api/v1/extensions/echo', 'bob', { 'svc-application-name': 'argocd/app-a' })).status).to.equal(403);
      expect((await call('/api/v1/extensions/echo', 'admin', { 'svc-application-name': 'argocd/app-c' })).status).to.equal(200);
    });

    it('without the header the object is */<name>: only an every-project rule allows it', async () => {
      const alice = await call('/api/v1/extensions/echo', 'alice');
      expect(alice.status).to.equal(403);
      expect(alice.json()['message']).to.include('extensions, *, */echo nor extensions, get, */echo');
      expect((await call('/api/v1/extensions/echo', 'carol')).status).to.equal(200);
    });
  });

  describe('rights per method', () => {
    it('a get line allows GET and HEAD and refuses POST with a 403 naming post and the object', async () => {
      expect((await call('/api/v1/extensions/echo/x', 'dave')).status).to.equal(200);
      expect((await call('/api/v1/extensions/echo/x', 'dave', {}, { method: 'HEAD' })).status).to.equal(200);
      const post = await call('/api/v1/extensions/echo/x', 'dave', { 'content-type': 'text/plain' }, { method: 'POST', body: 'hi' });
      expect(post.status).to.equal(403);
      expect(post.json()).to.deep.equal({
        error: 'permission_denied',
        message: "'dave' may not use extension 'echo' with POST: no rights rule allows extensions, *, */echo nor extensions, post, */echo",
      });
      // A * line still allows every method.
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        expect((await call('/api/v1/extensions/echo/x', 'carol', {}, { method })).status, method).to.equal(200);
      }
    });
  });

  describe('backend per cluster', () => {
    it('chooses by destination name and by server through the cluster secret', async () => {
      const a = (await call('/api/v1/extensions/multi/x', 'alice', { 'svc-application-name': 'argocd/app-a' })).json() as unknown as Echo;
      expect(a).to.include({ backend: 'in-cluster', url: '/x' });
      const b = (await call('/api/v1/extensions/multi/x', 'alice', { 'svc-application-name': 'argocd/app-b' })).json() as unknown as Echo;
      expect(b).to.include({ backend: 'prod', url: '/p/x' });
    });

    it('400 without the application header, 404 no_backend for a cluster without a backend', async () => {
      const none = await call('/api/v1/extensions/multi/x', 'carol');
      expect(none.status).to.equal(400);
      expect(none.json()['message']).to.include('Svc-Application-Name');
      const nowhere = await call('/api/v1/extensions/multi/x', 'alice', { 'svc-application-name': 'argocd/app-x' });
      expect(nowhere.status).to.equal(404);
      expect(nowhere.json()).to.deep.equal({ error: 'no_backend', message: "extension 'multi' has no backend for cluster 'nowhere' (application 'argocd/app-x')" });
    });
  });
});
