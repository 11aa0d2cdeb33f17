/** config/kube/configmap-api-writer: a ConfigMap's data written through the API with optimistic concurrency. */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { updateConfigMapViaApi } from '../../../src/config/kube/configmap-api-writer.js';
import { openKubeClient } from '../../../src/config/kube/kube-client.js';
import { startFakeKube } from '../../helpers/fake-kube-apiserver.js';
import { makeTestCa } from '../../helpers/test-ca.js';

const CONFIGMAP = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' } as const;

describe('config/kube/configmap-api-writer', function () {
  this.timeout(20_000);

  it("re-applies its change to another writer's version after a 409 Conflict, keeping that writer's key", async () => {
    const kube = await startFakeKube({ tls: makeTestCa() });
    const work = mkdtempSync(join(tmpdir(), 'svc-cm-api-'));
    try {
      writeFileSync(join(work, 'kubeconfig'), kube.kubeconfig('svc'));
      kube.store.put(CONFIGMAP, 'svc', { metadata: { name: 'svc-cm' }, data: { 'accounts.bob': 'login' } });
      const client = await openKubeClient({ kubeconfig: join(work, 'kubeconfig') });
      let calls = 0;
      const result = await updateConfigMapViaApi(client, 'svc-cm', (current) => {
        // The first time, another writer lands between this read and the update.
        if (calls++ === 0) kube.store.put(CONFIGMAP, 'svc', { metadata: { name: 'svc-cm' }, data: { ...current, 'operator.key': 'theirs' } });
        return { set: { 'accounts.bob.enabled': 'false' } };
      });
      expect(calls).to.equal(2);
      expect(result.created).to.equal(false);
      expect(kube.refusals.get(409)).to.equal(1);
      expect(kube.store.get('configmaps', 'svc', 'svc-cm')?.['data']).to.deep.equal({ 'accounts.bob': 'login', 'accounts.bob.enabled': 'false', 'operator.key': 'theirs' });
    } finally {
      await kube.close();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
