/**
 * The stand-in API server speaks the protocol to a client nobody here wrote: the installed
 * kubectl applies, edits, patches, lists by label and watches through it.
 */
import { expect } from 'chai';
import { startFakeKube, type FakeKube } from '../../helpers/fake-kube-apiserver.js';
import { kubectlFor, type Kubectl } from '../../helpers/kubectl.js';
import { makeTestCa } from '../../helpers/test-ca.js';

const CM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: svc-cm
  labels:
    app.kubernetes.io/part-of: svc
data:
  url: http://one.example
`;

describe('stand-in Kubernetes API server, driven by kubectl', function () {
  this.timeout(60_000);
  let kube: FakeKube;
  let kubectl: Kubectl;
  before(async () => {
    kube = await startFakeKube({ tls: makeTestCa() });
    kubectl = kubectlFor(kube, 'svc');
  });
  after(async () => {
    kubectl.close();
    await kube.close();
  });

  it('applies, patches, edits and reads back a ConfigMap', async () => {
    expect(await kubectl.apply(CM)).to.match(/configmap\/svc-cm created/);
    await kubectl.run(['patch', 'configmap', 'svc-cm', '-p', '{"data":{"extra":"1"}}']);
    await kubectl.edit('configmap/svc-cm', 's#http://one.example#http://two.example#');
    const data = JSON.parse(await kubectl.run(['get', 'configmap', 'svc-cm', '-o', 'jsonpath={.data}'])) as Record<string, string>;
    expect(data).to.deep.equal({ url: 'http://two.example', extra: '1' });
    // kubectl apply sends a strategic merge patch computed from its last-applied annotation: `extra` stays (not in it).
    await kubectl.apply(CM.replace('two', 'three').replace('one', 'three'));
    expect(kube.store.get('configmaps', 'svc', 'svc-cm')?.['data']).to.deep.equal({ url: 'http://three.example', extra: '1' });
  });

  it('selects by label and lists Secrets and Applications', async () => {
    await kubectl.apply(`apiVersion: v1\nkind: Secret\nmetadata:\n  name: other\nstringData:\n  k: v\n`);
    await kubectl.apply(`apiVersion: svc.io/v1alpha1\nkind: Application\nmetadata:\n  name: guestbook\nspec:\n  project: default\n`);
    expect(await kubectl.run(['get', 'secret', '-l', 'app.kubernetes.io/part-of=svc', '-o', 'name'])).to.equal('');
    expect(await kubectl.run(['get', 'secret', '-l', '!app.kubernetes.io/part-of', '-o', 'name'])).to.equal('secret/other\n');
    expect(await kubectl.run(['get', 'secret', 'other', '-o', 'jsonpath={.data.k}'])).to.equal(Buffer.from('v').toString('base64'));
    expect(await kubectl.run(['get', 'applications', '-o', 'name'])).to.equal('application.svc.io/guestbook\n');
  });

  it('streams changes to kubectl get --watch', async () => {
    const watching = kubectl.run(['get', 'configmap', 'svc-cm', '--watch', '--request-timeout=3s', '-o', 'jsonpath={.data.url}{"\\n"}']).catch((err: Error) => err.message);
    await new Promise((r) => setTimeout(r, 1500));
    await kubectl.run(['patch', 'configmap', 'svc-cm', '--type', 'merge', '-p', '{"data":{"url":"http://watched.example"}}']);
    const out = await watching;
    expect(out).to.include('http://watched.example');
  });

  it('answers a stale resourceVersion with 409 and a missing permission with 403', async () => {
    const stale = CM.replace('metadata:\n', 'metadata:\n  resourceVersion: "1"\n');
    const conflict = await kubectl.run(['replace', '--validate=false', '-f', '-'], { input: stale }).catch((err: Error) => err.message);
    expect(conflict).to.match(/the object has been modified/);
    kube.rules = [{ verbs: ['get', 'list', 'watch'], resources: ['configmaps'] }];
    const denied = await kubectl.run(['patch', 'configmap', 'svc-cm', '-p', '{"data":{"x":"y"}}']).catch((err: Error) => err.message);
    kube.rules = undefined;
    expect(denied).to.match(/cannot patch resource "configmaps"/);
    expect(await kubectl.run(['get', 'configmap', 'nope']).catch((err: Error) => err.message)).to.match(/NotFound|not found/);
  });
});
