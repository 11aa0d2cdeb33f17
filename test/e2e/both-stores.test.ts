/**
 * The same edits of svc-cm, run against a running server on each source: the directory (an
 * operator rewriting the file) and the Kubernetes API (kubectl patch on the stand-in API
 * server). The outcomes must be the same, problems included but for the name of the source:
 * one code path after the source.
 */
import { expect } from 'chai';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { accountsConfigDir, waitFor } from '../helpers/accounts-fixture.js';
import { startFakeKube, type FakeKube } from '../helpers/fake-kube-apiserver.js';
import { kubectlFor, type Kubectl } from '../helpers/kubectl.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

interface Source {
  readonly server: TestServer;
  /** Sets (or, with undefined, removes) one key of svc-cm, as an operator would. */
  setCm(key: string, value: string | undefined): Promise<void>;
  close(): Promise<void>;
}

async function directorySource(): Promise<Source> {
  const dir = accountsConfigDir();
  const server = await startTestServer(dir);
  const file = join(dir, 'svc-cm.yaml');
  return {
    server,
    async setCm(key, value) {
      const doc = YAML.parse(readFileSync(file, 'utf8')) as { data: Record<string, string> };
      if (value === undefined) delete doc.data[key];
      else doc.data[key] = value;
      writeFileSync(file, YAML.stringify(doc));
    },
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function kubernetesSource(): Promise<Source> {
  const kube: FakeKube = await startFakeKube({ tls: makeTestCa() });
  const kubectl: Kubectl = kubectlFor(kube, 'svc');
  const dir = accountsConfigDir();
  await kubectl.run(['apply', '--validate=false', '-f', dir]);
  const work = makeTempDir('svc-both-');
  const kubeconfig = join(work, 'kubeconfig');
  writeFileSync(kubeconfig, kube.kubeconfig('svc'));
  const server = await startTestServer(join(work, 'unused'), { kube: { kubeconfig, namespace: 'svc' } });
  return {
    server,
    async setCm(key, value) {
      await kubectl.run(['patch', 'configmap', 'svc-cm', '--type', 'merge', '-p', JSON.stringify({ data: { [key]: value ?? null } })]);
    },
    async close() {
      await server.close();
      kubectl.close();
      await kube.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    },
  };
}

const extension = (url: string) => YAML.stringify({ extensions: [{ name: 'metrics', enabled: true, backend: { services: [{ url }] } }] });

for (const [name, open] of [
  ['directory', directorySource],
  ['kubernetes', kubernetesSource],
] as const) {
  describe(`e2e: svc-cm edits on the ${name} store`, function () {
    cleanUpTempDirs();
    this.timeout(60_000);
    let source: Source;
    before(async () => {
      source = await open();
    });
    after(async () => {
      await source?.close();
    });
    const settings = () => source.server.services.settings.current();

    it('an account added and an extension changed are in force within 2 s', async () => {
      await source.setCm('accounts.erin', 'apiKey');
      await waitFor(() => settings().accounts.has('erin'), 'erin', 2000);
      await source.setCm('extension.config', extension('http://metrics.internal:8080'));
      await waitFor(() => String(settings().extensions[0]?.services[0]?.url) === 'http://metrics.internal:8080', 'the extension', 2000);
      await source.setCm('extension.config', extension('http://metrics2.internal:8080'));
      await waitFor(() => String(settings().extensions[0]?.services[0]?.url) === 'http://metrics2.internal:8080', 'the changed extension', 2000);
    });

    it('a broken edit keeps the last good extension and reports the key path', async () => {
      const before = settings().extensions;
      await source.setCm('extension.config', extension('not a url'));
      await waitFor(() => source.server.logs().includes("extensions[0].backend.services[0].url: 'not a url' is not a URL"), 'the problem', 2000);
      expect(settings().extensions).to.deep.equal(before);
      await source.setCm('extension.config', 'extensions: [unclosed');
      await waitFor(() => source.server.logs().includes('YAML does not parse, the previous value stays in force'), 'the YAML problem', 2000);
      expect(settings().extensions).to.deep.equal(before);
    });
  });
}
