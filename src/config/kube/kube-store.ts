/**
 * The ConfigStore backed by the Kubernetes API: svc-cm and svc-rbac-cm, svc's Secrets (named,
 * labelled part-of svc, or cluster Secrets) and Application objects (of svc's namespace, or of
 * the namespaces --application-namespaces lists), each kept
 * by a Reflector (LIST + WATCH). After the source, everything is the directory store's path:
 * every object goes, as one document of its own source, through loadDocuments (load-dir.ts):
 * the same parser, the same per-object rejections and last-good stand-ins. While the API
 * cannot be reached, the last good snapshot stays in force and the outage shows in the log and
 * in /metrics (svc_config_store_up).
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { createSerialQueue } from '../../lib/file-lock.js';
import { CurrentSnapshot } from '../current-snapshot.js';
import { loadDocuments, type DocumentsLoad } from '../load-dir.js';
import { INITIAL_ADMIN_SECRET, PART_OF_LABEL, PART_OF_VALUE, RBAC_CM, SECRET_TYPE_LABEL, SETTINGS_CM, SETTINGS_SECRET, type StoreSnapshot } from '../manifests.js';
import type { ConfigProblem } from '../problems.js';
import { SecretNotInForce, secretNotInForceReasons } from '../secret-in-force.js';
import type { ConfigMapWriter, ConfigStore, SecretPatch, SnapshotListener } from '../store.js';
import { updateConfigMapViaApi } from './configmap-api-writer.js';
import type { KubeClient, Plural } from './kube-client.js';
import { Reflector, type Backoff, type KubeObject } from './reflector.js';
import { updateSecretViaApi } from './secret-api-writer.js';

export interface KubeStoreOptions {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly backoff?: Backoff;
  /** Where svc_config_store_up is registered (the server's /metrics). */
  readonly registry?: Registry;
  /** How long the first LIST of every resource may take before the start fails. */
  readonly startTimeoutMs?: number;
  /** Where Application objects are read; svc's own namespace when absent or empty. */
  readonly applicationNamespaces?: readonly string[];
}

export interface KubeStore extends ConfigStore, ConfigMapWriter {
  readonly namespace: string;
  problems(): readonly ConfigProblem[];
  /** Every resource listed and the API answering now. */
  connected(): boolean;
}

const KINDS: Readonly<Record<Plural, string>> = { configmaps: 'ConfigMap', secrets: 'Secret', applications: 'Application' };
const NAMED_CONFIGMAPS = new Set([SETTINGS_CM, RBAC_CM]);
const NAMED_SECRETS = new Set([SETTINGS_SECRET, INITIAL_ADMIN_SECRET]);

function labels(object: KubeObject): Record<string, unknown> {
  const value = (object['metadata'] as KubeObject | undefined)?.['labels'];
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

/** What svc reads of each resource; anything else in the namespace is dropped on arrival. */
const KEEP: Readonly<Record<Plural, (object: KubeObject) => boolean>> = {
  configmaps: (o) => NAMED_CONFIGMAPS.has(String((o['metadata'] as KubeObject | undefined)?.['name'])),
  secrets: (o) => NAMED_SECRETS.has(String((o['metadata'] as KubeObject | undefined)?.['name'])) || labels(o)[PART_OF_LABEL] === PART_OF_VALUE || SECRET_TYPE_LABEL in labels(o),
  applications: () => true,
};

export async function openKubeStore(options: KubeStoreOptions): Promise<KubeStore> {
  const store = new ApiStore(options);
  await store.start(options.startTimeoutMs ?? 30_000);
  return store;
}

class ApiStore implements KubeStore {
  readonly namespace: string;
  readonly #current: CurrentSnapshot;
  #down = new Set<string>();
  /** The last error of each resource that cannot be read, for the message of a failed start. */
  readonly #lastErrors = new Map<string, string>();
  #started = false;
  #closed = false;
  #pending = false;
  /** By `<resource>/<namespace>`: one reflector per resource and namespace read. */
  readonly #reflectors: ReadonlyMap<string, { readonly plural: Plural; readonly namespace: string; readonly reflector: Reflector }>;
  readonly #writes = createSerialQueue();
  readonly #up: Gauge | undefined;

  constructor(private readonly options: KubeStoreOptions) {
    this.namespace = options.client.namespace;
    this.#current = new CurrentSnapshot({ log: options.log, origin: { namespace: this.namespace }, sourceField: 'object' });
    const reflectors = new Map<string, { plural: Plural; namespace: string; reflector: Reflector }>();
    const appNamespaces = options.applicationNamespaces?.length ? [...new Set(options.applicationNamespaces)] : [this.namespace];
    const read: [Plural, string][] = [['configmaps', this.namespace], ['secrets', this.namespace], ...appNamespaces.map((ns): [Plural, string] => ['applications', ns])];
    for (const [plural, namespace] of read) {
      const key = `${plural}/${namespace}`;
      const reflector = new Reflector({
        client: options.client,
        plural,
        namespace,
        keep: KEEP[plural],
        log: options.log,
        ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
        onChange: () => this.#scheduleReload(),
        onHealth: (up, err) => this.#health(key, up, err),
      });
      reflectors.set(key, { plural, namespace, reflector });
    }
    this.#reflectors = reflectors;
    this.#up =
      options.registry === undefined
        ? undefined
        : new Gauge({ name: 'svc_config_store_up', help: '1 while the Kubernetes API answers the config store, 0 while svc serves its last good configuration', registers: [options.registry], aggregator: 'min' });
    this.#up?.set(0);
  }

  async start(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const why = [...this.#lastErrors].map(([key, message]) => `${key}: ${message}`).join('; ');
        reject(new Error(`the Kubernetes API at ${this.options.client.server} did not answer a LIST of every resource within ${timeoutMs} ms${why === '' ? '' : ` (${why})`}`));
      }, timeoutMs);
    });
    try {
      await Promise.race([Promise.all([...this.#reflectors.values()].map((r) => r.reflector.start())), timeout]);
    } catch (err: unknown) {
      for (const r of this.#reflectors.values()) r.reflector.stop();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.#started = true;
    this.#reload();
  }

  current(): StoreSnapshot {
    return this.#current.snapshot;
  }

  problems(): readonly ConfigProblem[] {
    return this.#current.problems;
  }

  connected(): boolean {
    return this.#started && this.#down.size === 0;
  }

  onChange(listener: SnapshotListener): () => void {
    return this.#current.onChange(listener);
  }

  onLoad(listener: () => void): () => void {
    return this.#current.onLoad(listener);
  }

  updateSecret(name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the config store is closed'));
    return this.#writes(async () => {
      const result = await updateSecretViaApi(this.options.client, name, mutate);
      if (result.object !== undefined) {
        this.#reflectors.get(`secrets/${this.namespace}`)?.reflector.upsert({ ...result.object, kind: 'Secret' });
        if (result.created) this.options.log.info({ secret: name, namespace: this.namespace }, 'created Secret');
      }
      const loaded = this.#reload();
      const reasons = secretNotInForceReasons({ ...loaded, rejectedFiles: [] }, name, sourceName('secrets', this.namespace, name));
      if (reasons.length > 0) throw new SecretNotInForce(name, reasons);
    });
  }

  /** As updateSecret, for a ConfigMap's `data` (the offline account commands; the server never writes one). */
  updateConfigMap(name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the config store is closed'));
    return this.#writes(async () => {
      const result = await updateConfigMapViaApi(this.options.client, name, mutate);
      if (result.object !== undefined) this.#reflectors.get(`configmaps/${this.namespace}`)?.reflector.upsert({ ...result.object, kind: 'ConfigMap' });
      const loaded = this.#reload();
      const reasons = secretNotInForceReasons({ ...loaded, rejectedFiles: [] }, name, sourceName('configmaps', this.namespace, name), 'ConfigMap');
      if (reasons.length > 0) throw new SecretNotInForce(name, reasons);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#writes(async () => undefined);
    for (const r of this.#reflectors.values()) r.reflector.stop();
  }

  #health(key: string, up: boolean, err?: unknown): void {
    const wasDown = this.#down.size > 0;
    if (up) {
      this.#down.delete(key);
      this.#lastErrors.delete(key);
    } else {
      this.#down.add(key);
      this.#lastErrors.set(key, err instanceof Error ? err.message : String(err));
    }
    const isDown = this.#down.size > 0;
    this.#up?.set(isDown ? 0 : 1);
    if (!wasDown && isDown && this.#started) {
      const reason = err instanceof Error ? err.message : String(err);
      this.options.log.error({ resource: key, err: reason }, `the Kubernetes API does not answer (${reason}); serving the last good configuration and retrying`);
    } else if (wasDown && !isDown) this.options.log.info({ server: this.options.client.server }, 'the Kubernetes API answers again; configuration re-read');
  }

  /** Events often come in bursts (a LIST, an apply of several objects): one reload for all. */
  #scheduleReload(): void {
    if (!this.#started || this.#pending || this.#closed) return;
    this.#pending = true;
    queueMicrotask(() => {
      this.#pending = false;
      this.#reload();
    });
  }

  #reload(): DocumentsLoad {
    const sources = new Map<string, readonly unknown[]>();
    for (const { plural, namespace, reflector } of this.#reflectors.values()) {
      for (const [name, object] of [...reflector.items].sort(([a], [b]) => a.localeCompare(b))) {
        // List items carry no kind; the resource says what they are.
        sources.set(sourceName(plural, namespace, name), [{ ...object, kind: KINDS[plural] }]);
      }
    }
    const result = loadDocuments(sources, this.#current.memory);
    this.#current.apply(result);
    return result;
  }
}

/** How an object is named in problems and logs, where a directory store names a file. */
export function sourceName(plural: Plural, namespace: string, name: string): string {
  return `kubernetes:${plural}/${namespace}/${name}`;
}
