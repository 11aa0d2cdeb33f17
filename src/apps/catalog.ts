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
  return { applications, clusters: readClusters(snapshot, sink) };
}

/**
 * Cluster secrets. Two with the same name or server make the backend an application gets
 * depend on file order, so the later one is reported and left out rather than silently shadowed.
 */
function readClusters(snapshot: StoreSnapshot, sink: ProblemSink): Cluster[] {
  const clusters: Cluster[] = [];
  const byName = new Map<string, string>();
  const byServer = new Map<string, string>();
  for (const secret of snapshot.secrets.values()) {
    if (secret.labels[SECRET_TYPE_LABEL] !== 'cluster') continue;
    const source = `Secret/${secret.name}`;
    const { name, server } = secret.data;
    if (name === undefined || server === undefined) {
      sink.add(source, ['data'], 'a cluster secret needs the keys name and server');
      continue;
    }
    const other = byName.get(name) ?? byServer.get(normalServer(server));
    if (other !== undefined) {
      const key = byName.has(name) ? 'name' : 'server';
      sink.add(source, ['data', key], `'${key === 'name' ? name : server}' is already the ${key} of Secret/${other}; this secret is ignored`);
      continue;
    }
    byName.set(name, secret.name);
    byServer.set(normalServer(server), secret.name);
    clusters.push({ name, server });
  }
  return clusters;
}

/**
 * One spelling per API server, so that two spellings never reach two clusters: scheme and host
 * in lower case and no default port (as WHATWG URL gives them), no trailing slashes.
 */
function normalServer(server: string): string {
  if (!URL.canParse(server)) return server.replace(/\/+$/, '');
  const url = new URL(server);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The cluster an application deploys to, by destination name or by server URL. */
export function destinationCluster(app: Application, catalog: AppCatalog): Cluster | undefined {
  const { name, server } = app.destination;
  if (name !== undefined) return catalog.clusters.find((c) => c.name === name) ?? (server === undefined ? { name, server: '' } : undefined);
  if (server !== undefined) return catalog.clusters.find((c) => normalServer(c.server) === normalServer(server));
  return undefined;
}
