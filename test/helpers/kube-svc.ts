/**
 * The stand-in Kubernetes API server (fake-kube-apiserver.ts) as svc's store: HTTPS with a test
 * CA, the real kubectl pointed at it, a kubeconfig for `svc-server --kube` in the namespace
 * `svc`, and servers started on it. Optionally loaded first with the accounts fixture, applied
 * by kubectl as an operator would.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accountsConfigDir } from './accounts-fixture.js';
import { startFakeKube, type FakeKube } from './fake-kube-apiserver.js';
import { kubectlFor, type Kubectl } from './kubectl.js';
import { startTestServer, type TestServer } from './server.js';
import { makeTestCa } from './test-ca.js';
import { makeTempDir, removeTempDir } from './temp-dir.js';

/** svc's namespace on the stand-in. */
export const KUBE_NS = 'svc';
/** Short retries so that an outage of a few seconds shows the whole cycle (production: 0.5 s to 15 s). */
export const KUBE_BACKOFF = { initialMs: 100, maxMs: 400 };

export interface KubeSvcOptions {
  /** A prefix for the temp dir of the kubeconfig. */
  readonly workPrefix: string;
  /** The stand-in's watch bookmarks, every this many ms. */
  readonly bookmarkMs?: number;
  /** `kubectl apply -f` of the accounts fixture (accounts-fixture.ts) before any server starts. */
  readonly accounts?: boolean;
}

export interface KubeSvc {
  readonly kube: FakeKube;
  readonly kubectl: Kubectl;
  readonly kubeconfig: string;
  /** `svc-server --kube` on the stand-in (its config dir is never read), with `options` besides. */
  startServer(options?: Parameters<typeof startTestServer>[1]): Promise<TestServer>;
  /** A Secret's data, decoded. */
  secretValues(name: string): Record<string, string>;
  /** Closes kubectl and the stand-in and removes the kubeconfig's dir; the servers are the caller's. */
  close(): Promise<void>;
}

export async function startKubeSvc(options: KubeSvcOptions): Promise<KubeSvc> {
  const kube = await startFakeKube({ tls: makeTestCa(), ...(options.bookmarkMs !== undefined ? { bookmarkMs: options.bookmarkMs } : {}) });
  const kubectl = kubectlFor(kube, KUBE_NS);
  const work = makeTempDir(options.workPrefix);
  async function close(): Promise<void> {
    kubectl.close();
    await kube.close();
    removeTempDir(work);
  }
  try {
    if (options.accounts === true) {
      const dir = accountsConfigDir();
      try {
        await kubectl.run(['apply', '--validate=false', '-f', dir]);
      } finally {
        removeTempDir(dir);
      }
    }
    const kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, kube.kubeconfig(KUBE_NS), { mode: 0o600 });
    return {
      kube,
      kubectl,
      kubeconfig,
      startServer: (serverOptions = {}) => startTestServer(join(work, 'unused'), { ...serverOptions, kube: { kubeconfig, namespace: KUBE_NS, backoff: KUBE_BACKOFF } }),
      secretValues(name) {
        const data = (kube.store.get('secrets', KUBE_NS, name)?.['data'] ?? {}) as Record<string, string>;
        return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      },
      close,
    };
  } catch (err: unknown) {
    await close();
    throw err;
  }
}
