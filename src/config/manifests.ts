/**
 * The Kubernetes objects svc reads from its store, reduced to what it uses. Parsing a manifest
 * never throws: a malformed object is a problem with its file and key path, and is left out.
 */
import { detachedString } from '../lib/detached-string.js';
import type { ProblemSink } from './problems.js';
import { dataOrigins, type ValueOrigin } from './value-origin.js';

export const PART_OF_LABEL = 'app.kubernetes.io/part-of';
export const PART_OF_VALUE = 'svc';
export const SECRET_TYPE_LABEL = 'svc.io/secret-type';

export const SETTINGS_CM = 'svc-cm';
export const RBAC_CM = 'svc-rbac-cm';
export const SETTINGS_SECRET = 'svc-secret';
export const INITIAL_ADMIN_SECRET = 'svc-initial-admin-secret';

export interface ObjectRef {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface ConfigMapObject {
  readonly name: string;
  readonly file: string;
  readonly data: Readonly<Record<string, string>>;
  /** Where each data value stands in `file`, when it was read from YAML text (value-origin.ts). */
  readonly valueOrigins?: Readonly<Record<string, ValueOrigin>>;
}

export interface SecretObject {
  readonly name: string;
  readonly file: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Values decoded once from `data` (base64), with `stringData` winning. */
  readonly data: Readonly<Record<string, string>>;
}

export interface ApplicationObject {
  readonly name: string;
  readonly namespace: string;
  readonly file: string;
  readonly project: string;
  readonly destination: { readonly name?: string; readonly server?: string };
}

/** Everything the store holds at one instant. Readers only ever see a whole snapshot. */
export interface StoreSnapshot {
  readonly configMaps: ReadonlyMap<string, ConfigMapObject>;
  readonly secrets: ReadonlyMap<string, SecretObject>;
  readonly applications: readonly ApplicationObject[];
}

export const EMPTY_SNAPSHOT: StoreSnapshot = {
  configMaps: new Map(),
  secrets: new Map(),
  applications: [],
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringMap(
  value: unknown,
  file: string,
  path: string,
  sink: ProblemSink,
): Record<string, string> | undefined {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) {
    sink.add(file, [path], 'must be a map of strings');
    return undefined;
  }
  const out: Record<string, string> = {};
  let ok = true;
  for (const [key, v] of Object.entries(value)) {
    // Detached, so that a value kept in a cache does not keep the file's whole text (detached-string.ts).
    if (typeof v === 'string') out[key] = detachedString(v);
    else if (typeof v === 'number' || typeof v === 'boolean') out[key] = String(v);
    else {
      sink.add(file, [path, key], 'must be a string');
      ok = false;
    }
  }
  return ok ? out : undefined;
}

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

function decodeSecretData(
  data: Record<string, string>,
  file: string,
  name: string,
  sink: ProblemSink,
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  let ok = true;
  for (const [key, value] of Object.entries(data)) {
    if (!BASE64.test(value)) {
      sink.add(file, [`Secret/${name}`, 'data', key], 'is not base64 (use stringData for plain text)');
      ok = false;
      continue;
    }
    out[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return ok ? out : undefined;
}

/** `ConfigMap/name`, `Secret/name` or `Application/namespace/name`; undefined for other kinds. */
export function objectKey(doc: unknown): string | undefined {
  if (typeof doc !== 'object' || doc === null) return undefined;
  const record = doc as Record<string, unknown>;
  const kind = record['kind'];
  const metadata = record['metadata'];
  if (kind !== 'ConfigMap' && kind !== 'Secret' && kind !== 'Application') return undefined;
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const meta = metadata as Record<string, unknown>;
  const name = meta['name'];
  if (typeof name !== 'string' || name === '') return undefined;
  if (kind !== 'Application') return `${kind}/${name}`;
  const namespace = typeof meta['namespace'] === 'string' ? meta['namespace'] : 'default';
  return `${kind}/${namespace}/${name}`;
}

/** One parsed YAML document to at most one object; problems go to the sink, keyed by file. */
export function readManifest(
  doc: unknown,
  file: string,
  sink: ProblemSink,
): { kind: 'ConfigMap'; object: ConfigMapObject } | { kind: 'Secret'; object: SecretObject } | { kind: 'Application'; object: ApplicationObject } | undefined {
  if (doc === null || doc === undefined) return undefined;
  if (!isRecord(doc)) {
    sink.add(file, [], 'a document is not a Kubernetes object (a map with kind and metadata)');
    return undefined;
  }
  const kind = doc['kind'];
  if (kind !== 'ConfigMap' && kind !== 'Secret' && kind !== 'Application') return undefined;
  const metadata = doc['metadata'];
  const name = isRecord(metadata) ? metadata['name'] : undefined;
  if (!isRecord(metadata) || typeof name !== 'string' || name === '') {
    sink.add(file, [`${kind}`, 'metadata', 'name'], 'is missing');
    return undefined;
  }
  // A bad labels map rejects the object, like a bad data map: every problem reported here makes
  // the loader keep the object's last good version. Applying it with labels {} instead would
  // silently change what it is (a cluster Secret would drop out of the catalog). The other
  // parts are still checked first, so all of the object's problems are reported at once.
  const labels = stringMap(metadata['labels'], file, `${kind}/${name}.metadata.labels`, sink);

  if (kind === 'ConfigMap') {
    const data = stringMap(doc['data'], file, `ConfigMap/${name}.data`, sink);
    if (data === undefined || labels === undefined) return undefined;
    const valueOrigins = dataOrigins(doc);
    return { kind, object: { name, file, data, ...(valueOrigins !== undefined ? { valueOrigins } : {}) } };
  }
  if (kind === 'Secret') {
    const raw = stringMap(doc['data'], file, `Secret/${name}.data`, sink);
    const plain = stringMap(doc['stringData'], file, `Secret/${name}.stringData`, sink);
    if (raw === undefined || plain === undefined) return undefined;
    const decoded = decodeSecretData(raw, file, name, sink);
    if (decoded === undefined || labels === undefined) return undefined;
    return { kind, object: { name, file, labels, data: { ...decoded, ...plain } } };
  }
  const spec = doc['spec'];
  const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : 'default';
  if (!isRecord(spec) || typeof spec['project'] !== 'string') {
    sink.add(file, [`Application/${namespace}/${name}`, 'spec', 'project'], 'is missing');
    return undefined;
  }
  if (labels === undefined) return undefined;
  const destination = isRecord(spec['destination']) ? spec['destination'] : {};
  const destName = typeof destination['name'] === 'string' ? destination['name'] : undefined;
  const destServer = typeof destination['server'] === 'string' ? destination['server'] : undefined;
  return {
    kind,
    object: {
      name,
      namespace,
      file,
      project: spec['project'],
      destination: {
        ...(destName !== undefined ? { name: destName } : {}),
        ...(destServer !== undefined ? { server: destServer } : {}),
      },
    },
  };
}
