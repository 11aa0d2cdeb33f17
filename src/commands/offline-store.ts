/** The store an offline command writes: a config dir (not watched), or the cluster's through the API. */
import { pino } from 'pino';
import { openDirStore, type DirStore } from '../config/dir-store.js';
import { openKubeClient } from '../config/kube/kube-client.js';
import { openKubeStore, type KubeStore } from '../config/kube/kube-store.js';
import type { ClusterStoreOptions } from '../config/kube/open.js';

export async function openOfflineStore(source: string | ClusterStoreOptions): Promise<DirStore | KubeStore> {
  const log = pino({ level: 'silent' });
  return typeof source === 'string'
    ? openDirStore({ dir: source, log, watch: false })
    : openKubeStore({ client: await openKubeClient(source), log, backoff: { initialMs: 200, maxMs: 1000 }, startTimeoutMs: 15_000 });
}
