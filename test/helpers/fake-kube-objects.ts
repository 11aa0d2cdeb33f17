/**
 * The object store of the stand-in Kubernetes API server (fake-kube-apiserver.ts): objects by
 * resource, namespace and name, one resource version counter for all of them (as etcd's
 * revision), the history of changes that watches replay, and label selectors. It follows the
 * semantics documented in "API Concepts" (kubernetes.io/docs/reference/using-api/api-concepts/:
 * resource versions, efficient detection of changes, 410 Gone) and "Labels and Selectors"
 * (kubernetes.io/docs/concepts/overview/working-with-objects/labels/). Nothing here is
 * Kubernetes code.
 */
import { randomUUID } from 'node:crypto';

export type KubeObject = Record<string, unknown> & { metadata: Record<string, unknown> };
export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ResourceType {
  readonly group: string; // '' for core
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

export const RESOURCES: readonly ResourceType[] = [
  { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' },
  { group: '', version: 'v1', plural: 'secrets', kind: 'Secret' },
  { group: 'svc.io', version: 'v1alpha1', plural: 'applications', kind: 'Application' },
];

export interface StoredEvent {
  readonly rv: number;
  readonly type: EventType;
  readonly plural: string;
  readonly namespace: string;
  readonly object: KubeObject;
}

export class KubeError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
  status(): Record<string, unknown> {
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, code: this.code };
  }
}

export function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

export class ObjectStore {
  rv = 1;
  /** Watches from a version below this one get 410 Gone (the history before it is compacted). */
  compactedRv = 1;
  readonly #objects = new Map<string, KubeObject>();
  readonly #history: StoredEvent[] = [];
  readonly #listeners = new Set<(event: StoredEvent) => void>();

  list(plural: string, namespace: string | undefined, selector: string | undefined): KubeObject[] {
    const match = parseSelector(selector);
    return [...this.#objects.entries()]
      .filter(([key, obj]) => key.startsWith(`${plural}/`) && (namespace === undefined || obj.metadata['namespace'] === namespace) && match(labelsOf(obj)))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, obj]) => structuredClone(obj));
  }

  get(plural: string, namespace: string, name: string): KubeObject | undefined {
    const found = this.#objects.get(`${plural}/${namespace}/${name}`);
    return found === undefined ? undefined : structuredClone(found);
  }

  /** Stores `object` (already complete but for server-set metadata) and records the event. */
  put(type: ResourceType, namespace: string, object: KubeObject, notify = true): KubeObject {
    const name = String(object.metadata['name']);
    const key = `${type.plural}/${namespace}/${name}`;
    const before = this.#objects.get(key);
    this.rv++;
    const stored: KubeObject = {
      ...object,
      apiVersion: apiVersionOf(type),
      kind: type.kind,
      metadata: {
        ...object.metadata,
        name,
        namespace,
        uid: before?.metadata['uid'] ?? randomUUID(),
        creationTimestamp: before?.metadata['creationTimestamp'] ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        resourceVersion: String(this.rv),
      },
    };
    this.#objects.set(key, stored);
    this.#record({ rv: this.rv, type: before === undefined ? 'ADDED' : 'MODIFIED', plural: type.plural, namespace, object: stored }, notify);
    return structuredClone(stored);
  }

  delete(plural: string, namespace: string, name: string): KubeObject | undefined {
    const key = `${plural}/${namespace}/${name}`;
    const before = this.#objects.get(key);
    if (before === undefined) return undefined;
    this.#objects.delete(key);
    this.rv++;
    const gone = { ...before, metadata: { ...before.metadata, resourceVersion: String(this.rv) } };
    this.#record({ rv: this.rv, type: 'DELETED', plural, namespace, object: gone }, true);
    return structuredClone(gone);
  }

  /** Events after `rv` for a resource; throws 410 when that version is compacted. */
  since(rv: number, plural: string): StoredEvent[] {
    if (rv < this.compactedRv) throw new KubeError(410, 'Expired', `too old resource version: ${rv} (${this.compactedRv})`);
    return this.#history.filter((e) => e.rv > rv && e.plural === plural);
  }

  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #record(event: StoredEvent, notify: boolean): void {
    this.#history.push(event);
    if (this.#history.length > 1000) this.#history.shift();
    if (notify) for (const listener of this.#listeners) listener(event);
  }
}

export function labelsOf(obj: KubeObject): Record<string, string> {
  const labels = obj.metadata['labels'];
  return typeof labels === 'object' && labels !== null ? (labels as Record<string, string>) : {};
}

/** Equality- and set-based selectors: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x,y)`. */
export function parseSelector(selector: string | undefined): (labels: Record<string, string>) => boolean {
  if (selector === undefined || selector.trim() === '') return () => true;
  const terms = selector.match(/[^,(]+(\([^)]*\))?/g) ?? [];
  const tests = terms.map((raw) => {
    const term = raw.trim();
    let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m !== null) {
      const [, key, op, values] = m as unknown as [string, string, string, string];
      const set = new Set(values.split(',').map((v) => v.trim()));
      return (l: Record<string, string>) => (op === 'in' ? key in l && set.has(l[key] as string) : !(key in l) || !set.has(l[key] as string));
    }
    m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (m !== null) {
      const [, key, op, value] = m as unknown as [string, string, string, string];
      return (l: Record<string, string>) => (op === '!=' ? l[key] !== value : l[key] === value);
    }
    if (term.startsWith('!')) return (l: Record<string, string>) => !(term.slice(1) in l);
    if (/^[^=!\s]+$/.test(term)) return (l: Record<string, string>) => term in l;
    throw new KubeError(400, 'BadRequest', `unable to parse requirement: ${term}`);
  });
  return (labels) => tests.every((t) => t(labels));
}

/** RFC 7386 JSON merge patch; strategic merge patch is treated alike (ConfigMaps, Secrets and our CR have no merge-keyed lists). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue; // strategic-merge directives
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
