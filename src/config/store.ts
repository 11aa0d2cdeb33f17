/**
 * The contract every configuration store keeps: today a directory of manifests
 * (dir-store.ts), later perhaps the Kubernetes API. Callers never learn which.
 */
import type { StoreSnapshot } from './manifests.js';
import type { ConfigProblem } from './problems.js';

/** Keys to set and keys to remove in one Secret, applied together or not at all. */
export interface SecretPatch {
  readonly set?: Readonly<Record<string, string>>;
  readonly delete?: readonly string[];
}

/** `current` with `patch` applied: what the Secret's keys will be once it is written. */
export function patchedValues(current: Readonly<Record<string, string>>, patch: SecretPatch): Record<string, string> {
  const values: Record<string, string> = { ...current, ...(patch.set ?? {}) };
  for (const key of patch.delete ?? []) delete values[key];
  return values;
}

/**
 * Read-modify-write of one ConfigMap's `data`, for the offline account commands (the server
 * itself never writes configuration). The same guarantees as ConfigStore.updateSecret.
 */
export interface ConfigMapWriter {
  updateConfigMap(name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<void>;
}

export type SnapshotListener = (snapshot: StoreSnapshot) => void;

export interface ConfigStore {
  /** The last good snapshot; never a half-applied change. */
  current(): StoreSnapshot;
  /** Called after each applied change. Returns a function that unsubscribes. */
  onChange(listener: SnapshotListener): () => void;
  /**
   * Read-modify-write of one Secret. `mutate` sees the values as stored at this moment,
   * including writes by other processes, and its patch is applied atomically. Concurrent calls
   * are serialised, so none is lost. A missing Secret is created (labelled part-of svc).
   * Resolves once the change is on disk and visible through current().
   */
  updateSecret(name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<void>;
  /** Files or objects the latest load refused (their last good version stays in force); absent: none can be. */
  problems?(): readonly ConfigProblem[];
  /** Called after every load, changed or not (a refused file changes nothing but the problems); absent: no such loads. */
  onLoad?(listener: () => void): () => void;
  /** false while the source cannot be reached and the last good snapshot stays in force; absent: always reachable. */
  connected?(): boolean;
  close(): Promise<void>;
}
