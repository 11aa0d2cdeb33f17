/** `svc-server idp rotate-keys --kube`: the identity provider's keys rotated in the cluster's svc-secret, other keys untouched. */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { runRotateKeys } from '../../src/commands/idp.js';
import { startFakeKube } from '../helpers/fake-kube-apiserver.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

function sink(): Writable & { text: () => string } {
  let text = '';
  const w = new Writable({
    write(chunk: Buffer, _e, done) {
      text += chunk.toString();
      done();
    },
  });
  return Object.assign(w, { text: () => text });
}

describe('commands/idp rotate-keys --kube', function () {
  cleanUpTempDirs();
  this.timeout(30_000);

  it('adds a signing key to svc-secret through the API and keeps the other keys', async () => {
    const kube = await startFakeKube({ tls: makeTestCa() });
    const work = makeTempDir('svc-idp-kube-');
    try {
      writeFileSync(join(work, 'kubeconfig'), kube.kubeconfig('svc'));
      const b64 = (v: string) => Buffer.from(v).toString('base64');
      kube.store.put({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret' }, 'svc', { metadata: { name: 'svc-secret' }, data: { 'server.secretkey': b64('k'.repeat(32)), 'operator.note': b64('keep me') } });
      const out = sink();
      const err = sink();
      expect(await runRotateKeys({ kubeconfig: join(work, 'kubeconfig') }, out, err), err.text()).to.equal(0);
      expect(out.text()).to.match(/^added signing key /);
      const data = kube.store.get('secrets', 'svc', 'svc-secret')?.['data'] as Record<string, string>;
      expect(Object.keys(data).sort()).to.include.members(['idp.signingKeys', 'operator.note', 'server.secretkey']);
      expect(Buffer.from(data['operator.note'] ?? '', 'base64').toString()).to.equal('keep me');
    } finally {
      await kube.close();
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('rotates the extension identity assertion keys in the same run, with overlap', async () => {
    const kube = await startFakeKube({ tls: makeTestCa() });
    const work = makeTempDir('svc-idp-kube-');
    try {
      writeFileSync(join(work, 'kubeconfig'), kube.kubeconfig('svc'));
      kube.store.put({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret' }, 'svc', { metadata: { name: 'svc-secret' }, data: { 'server.secretkey': Buffer.from('k'.repeat(32)).toString('base64') } });
      const kids: string[] = [];
      for (let run = 0; run < 2; run++) {
        const out = sink();
        const err = sink();
        expect(await runRotateKeys({ kubeconfig: join(work, 'kubeconfig') }, out, err), err.text()).to.equal(0);
        kids.push(String(/^added identity assertion key (\S+);/m.exec(out.text())?.[1]));
      }
      const data = kube.store.get('secrets', 'svc', 'svc-secret')?.['data'] as Record<string, string>;
      const stored = JSON.parse(Buffer.from(data['assertion.signingKeys'] ?? '', 'base64').toString()) as { kid: string; retiredAt?: string }[];
      expect(stored.map((k) => k.kid)).to.deep.equal([kids[1], kids[0]]);
      expect(stored[1]?.retiredAt, 'the first key retired, still published').to.be.a('string');
    } finally {
      await kube.close();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
