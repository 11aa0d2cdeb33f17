/** `svc-server --kube`: the client, the store read from the API, and the first start's generated secrets. */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { openKubeClient, type KubeClientOptions } from './kube-client.js';
import { ensureInitialConfigInCluster } from './kube-bootstrap.js';
import { openKubeStore, type KubeStore } from './kube-store.js';
import type { Backoff } from './reflector.js';

export interface ClusterStoreOptions extends KubeClientOptions {
  /** Retry pacing while the API server is down (tests shorten it). */
  readonly backoff?: Backoff;
  /** Where Application objects are read (`--application-namespaces`); svc's own namespace by default. */
  readonly applicationNamespaces?: readonly string[];
}

export async function openClusterStore(options: ClusterStoreOptions, log: Logger, registry?: Registry): Promise<KubeStore> {
  const client = await openKubeClient(options);
  const store = await openKubeStore({ client, log, ...(registry !== undefined ? { registry } : {}), ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
    ...(options.applicationNamespaces !== undefined ? { applicationNamespaces: options.applicationNamespaces } : {}),
  });
  try {
    await ensureInitialConfigInCluster({ store, client, log });
  } catch (err: unknown) {
    await store.close();
    throw err;
  }
  log.info({ server: client.server, namespace: client.namespace }, 'configuration read from the Kubernetes API');
  return store;
}
