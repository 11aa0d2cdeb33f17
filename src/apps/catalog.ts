/** Applications and clusters as the proxy needs them: project and destination cluster. */
import { SECRET_TYPE_LABEL, type StoreSnapshot } from '../config/manifests.js';
import type { ProblemSink } from '../config/problems.js';

export interface Application {
  readonly namespace: string;
  readonly name: string;
  readonly project: string;
  readonly destination: { readonly name?: string; readonly server?: string };
}

export interface Cluster {
  readonly name: string;
  readonly server: string;
}

export interface AppCatalog {
  /** Keyed `<namespace>/<name>`. */
  readonly applications: ReadonlyMap<string, Application>;
  readonly clusters: readonly Cluster[];
}

export function readCatalog(snapshot: StoreSnapshot, sink: ProblemSink): AppCatalog {
  const applications = new Map<string, Application>();
  for (const app of snapshot.applications) {
    applications.set(`${app.namespace}/${app.name}`, { namespace: app.namespace, name: app.name, project: app.project, destination: app.destination });
  }
  const clusters: Cluster[] = [];
  for (const secret of snapshot.secrets.values()) {
    if (secret.labels[SECRET_TYPE_LABEL] !== 'cluster') continue;
    const { name, server } = secret.data;
    if (name === undefined || server === undefined) {
      sink.add(`Secret/${secret.name}`, ['data'], 'a cluster secret needs the keys name and server');
      continue;
    }
    clusters.push({ name, server });
  }
  return { applications, clusters };
}

/** The cluster an application deploys to, by destination name or by server URL. */
export function destinationCluster(app: Application, catalog: AppCatalog): Cluster | undefined {
  const { name, server } = app.destination;
  if (name !== undefined) return catalog.clusters.find((c) => c.name === name) ?? (server === undefined ? { name, server: '' } : undefined);
  if (server !== undefined) return catalog.clusters.find((c) => c.server.replace(/\/$/, '') === server.replace(/\/$/, ''));
  return undefined;
}
