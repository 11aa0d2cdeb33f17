/**
 * The ConfigStore backed by a directory of Kubernetes manifests (DESIGN.md §2).
 *
 * It owns the current snapshot, the watcher that refreshes it, and the writes to Secrets.
 * Loading and rejection rules live in load-dir.ts, change detection in watch.ts, the write path
 * in secret-writer.ts. A snapshot is a new object built aside and swapped in with one
 * assignment, so a reader holds either the old one or the new one, never a mix.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { createSerialQueue } from '../lib/file-lock.js';
import { CurrentSnapshot } from './current-snapshot.js';
import { loadDirectory, type LoadResult } from './load-dir.js';
import type { StoreSnapshot } from './manifests.js';
import type { ConfigProblem } from './problems.js';
import { SecretNotInForce, secretNotInForceReasons } from './secret-in-force.js';
import { refuseStoresOutsideTheirFiles } from './store-files.js';
import { restoreSecretFile, updateSecretOnDisk, type SecretFileChange, type SecretMutation } from './secret-writer.js';
import { asSecretWriteFailure } from './write-failure.js';
import type { ConfigMapWriter, ConfigStore, SnapshotListener } from './store.js';
import { updateConfigMapOnDisk, type DataMutation } from './configmap-writer.js';
import { DEFAULT_DEBOUNCE_MS, DEFAULT_POLL_MS, watchTree, type TreeWatch } from './watch.js';

export interface DirStoreOptions {
  readonly dir: string;
  readonly log: Logger;
  /** Quiet time after a file event before reloading. */
  readonly debounceMs?: number;
  /** How often mtimes are polled in case the watcher missed something. */
  readonly pollMs?: number;
  /** false for one-shot readers (`svc-server validate`): load once, watch nothing. */
  readonly watch?: boolean;
}

export interface DirStore extends ConfigStore, ConfigMapWriter {
  readonly dir: string;
  /** The problems of the latest load, for `svc-server validate` and the logs. */
  problems(): readonly ConfigProblem[];
  /** Loads the directory now (a store that does not watch sees others' edits this way). */
  reload(): Promise<void>;
}

/**
 * Opens the store with one load. A load that defines a store outside its own file is refused
 * (StoresOutsideTheirFiles, store-files.ts): there is no last good configuration to keep yet.
 */
export async function openDirStore(options: DirStoreOptions): Promise<DirStore> {
  const store = new ManifestDirStore(path.resolve(options.dir), options.log);
  const first = await store.load();
  if (first !== undefined && first.misplacedStores.length > 0) {
    await store.close();
    refuseStoresOutsideTheirFiles(store.dir, first);
  }
  if (options.watch !== false) {
    store.startWatching(options.debounceMs ?? DEFAULT_DEBOUNCE_MS, options.pollMs ?? DEFAULT_POLL_MS);
  }
  return store;
}

class ManifestDirStore implements DirStore {
  readonly #current: CurrentSnapshot;
  #signature = '';
  #watch: TreeWatch | undefined;
  #closed = false;
  #stopped = false;
  // Loads run one at a time so an older load can never overwrite a newer one.
  readonly #loads = createSerialQueue();
  // Writes of this store queue here before they compete (via the lock file) with other processes.
  readonly #writes = createSerialQueue();

  constructor(
    readonly dir: string,
    private readonly log: Logger,
  ) {
    this.#current = new CurrentSnapshot({ log, origin: { dir }, sourceField: 'file' });
  }

  current(): StoreSnapshot {
    return this.#current.snapshot;
  }

  problems(): readonly ConfigProblem[] {
    return this.#current.problems;
  }

  onChange(listener: SnapshotListener): () => void {
    return this.#current.onChange(listener);
  }

  onLoad(listener: () => void): () => void {
    return this.#current.onLoad(listener);
  }

  /**
   * Resolves only once the write is in force: callers (a token revocation, a password change)
   * report success on it. If the reload rejects the Secret (or its file) for any reason, the
   * file's previous bytes are put back and this rejects with SecretNotInForce, naming the problem.
   */
  updateSecret(name: string, mutate: SecretMutation): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the config store is closed'));
    return this.#writes(async () => {
      const hint = this.#current.snapshot.secrets.get(name)?.file;
      const result = await updateSecretOnDisk({ dir: this.dir, name, mutate, hint, log: this.log });
      // Callers expect to read their own write through current() once this resolves. Also when
      // nothing was written: the file may already say what the caller asks (a token removed by
      // hand) while a rejected object keeps an older version, the one with the token, in force.
      const loaded = await this.#reloadNow();
      const reasons = loaded === undefined ? [] : secretNotInForceReasons(loaded, name, result.file);
      if (reasons.length === 0) {
        if (result.created) this.log.info({ file: result.file, secret: name }, 'created Secret');
        return;
      }
      if (result.change !== undefined) await this.#undo(name, result.file, result.change, reasons);
      throw new SecretNotInForce(name, reasons);
    });
  }

  /**
   * As updateSecret, for a ConfigMap's `data` (the offline account commands; the server never
   * writes one): in force once this resolves, else undone and rejected with SecretNotInForce.
   */
  updateConfigMap(name: string, mutate: DataMutation): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the config store is closed'));
    return this.#writes(async () => {
      const hint = this.#current.snapshot.configMaps.get(name)?.file;
      const result = await updateConfigMapOnDisk({ dir: this.dir, name, mutate, hint });
      const loaded = await this.#reloadNow();
      const reasons = loaded === undefined ? [] : secretNotInForceReasons(loaded, name, result.file, 'ConfigMap');
      if (reasons.length === 0) {
        if (result.created) this.log.info({ file: result.file, configMap: name }, 'created ConfigMap');
        return;
      }
      if (result.change !== undefined) await this.#undo(name, result.file, result.change, reasons, 'ConfigMap');
      throw new SecretNotInForce(name, reasons);
    });
  }

  /** Puts back what a write replaced, so a change reported as failed cannot take effect later. */
  async #undo(name: string, file: string, change: SecretFileChange, reasons: readonly string[], kind: 'Secret' | 'ConfigMap' = 'Secret'): Promise<void> {
    const outcome = await restoreSecretFile(change).catch((err: unknown) => {
      throw asSecretWriteFailure(name, err, kind);
    });
    if (outcome === 'restored') {
      this.log.warn({ file, [kind === 'Secret' ? 'secret' : 'configMap']: name, reasons }, `${kind} ${name} is not in force after a write; the write was undone`);
      await this.#reloadNow();
    } else {
      // Someone wrote the file after us (their read-modify-write includes our change): not ours to discard.
      this.log.warn({ file, [kind === 'Secret' ? 'secret' : 'configMap']: name, reasons }, `${kind} ${name} is not in force after a write; the file changed since, so it was left as it is`);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.close();
    this.#watch = undefined;
    // Writes already queued finish, with their reload; only then do loads stop.
    await this.#writes(async () => undefined);
    this.#stopped = true;
    await this.#loads(async () => undefined);
  }

  startWatching(debounceMs: number, pollMs: number): void {
    this.#watch = watchTree({
      dir: this.dir,
      log: this.log,
      debounceMs,
      pollMs,
      loadedSignature: () => this.#signature,
      onChange: () => void this.reload().catch((err: unknown) => this.log.error({ err, dir: this.dir }, 'config reload failed')),
    });
  }

  async reload(): Promise<void> {
    await this.#reloadNow();
  }

  /** One load, applied, with its result (undefined once the store is closed). */
  load(): Promise<LoadResult | undefined> {
    return this.#reloadNow();
  }

  /** One load, applied; its result for a writer to check (undefined once the store is closed). */
  #reloadNow(): Promise<LoadResult | undefined> {
    return this.#loads(async () => {
      if (this.#stopped) return undefined;
      const result = await loadDirectory(this.dir, this.#current.memory);
      this.#signature = result.signature;
      this.#current.apply(result);
      return result;
    });
  }
}
