/**
 * What both stores do with a load, whatever its source: keep what survives to the next load, swap
 * the new snapshot in with one assignment (a reader holds the old one or the new one, never a
 * mix), tell the listeners only when the content changed, and log each problem when it first
 * appears, not again on every reload while it lasts.
 */
import type { Logger } from 'pino';
import { EMPTY_MEMORY, snapshotFingerprint, type DocumentsLoad, type LoadMemory } from './load-dir.js';
import { EMPTY_SNAPSHOT, type StoreSnapshot } from './manifests.js';
import { formatProblem, type ConfigProblem } from './problems.js';
import type { SnapshotListener } from './store.js';

export interface CurrentSnapshotOptions {
  readonly log: Logger;
  /** Where the configuration comes from, for the "configuration applied" line (`{ dir }`, `{ namespace }`). */
  readonly origin: Readonly<Record<string, string>>;
  /** The log field that names a problem's source: `file` for a directory, `object` for the API. */
  readonly sourceField: string;
}

export class CurrentSnapshot {
  #snapshot: StoreSnapshot = EMPTY_SNAPSHOT;
  #fingerprint = snapshotFingerprint(EMPTY_SNAPSHOT);
  #problems: readonly ConfigProblem[] = [];
  #memory: LoadMemory = EMPTY_MEMORY;
  #kept = new Set<string>();
  readonly #listeners = new Set<SnapshotListener>();
  readonly #loadListeners = new Set<() => void>();

  constructor(private readonly options: CurrentSnapshotOptions) {}

  get snapshot(): StoreSnapshot {
    return this.#snapshot;
  }

  /** The problems of the latest load. */
  get problems(): readonly ConfigProblem[] {
    return this.#problems;
  }

  /** What the next load starts from. */
  get memory(): LoadMemory {
    return this.#memory;
  }

  onChange(listener: SnapshotListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Told after every load, after the change listeners (the audit trail's refused files). */
  onLoad(listener: () => void): () => void {
    this.#loadListeners.add(listener);
    return () => this.#loadListeners.delete(listener);
  }

  apply(result: DocumentsLoad): void {
    this.#applyChange(result);
    for (const listener of this.#loadListeners) {
      try {
        listener();
      } catch (err: unknown) {
        this.options.log.error({ err }, 'a configuration load listener failed');
      }
    }
  }

  #applyChange(result: DocumentsLoad): void {
    this.#logNewProblems(result);
    this.#memory = result.memory;
    this.#problems = result.problems;
    const fingerprint = snapshotFingerprint(result.snapshot);
    if (fingerprint === this.#fingerprint) return; // a touched file, a comment: nothing to tell anyone
    this.#snapshot = result.snapshot;
    this.#fingerprint = fingerprint;
    const { log, origin } = this.options;
    log.info({ ...origin, configMaps: result.snapshot.configMaps.size, secrets: result.snapshot.secrets.size }, 'configuration applied');
    for (const listener of this.#listeners) {
      try {
        listener(result.snapshot);
      } catch (err: unknown) {
        log.error({ err }, 'a configuration change listener failed');
      }
    }
  }

  #logNewProblems(result: DocumentsLoad): void {
    const { log, sourceField } = this.options;
    const seen = new Set(this.#problems.map(formatProblem));
    for (const problem of result.problems) {
      const text = formatProblem(problem);
      if (!seen.has(text)) log.error({ [sourceField]: problem.source, path: problem.path }, `config rejected: ${text}`);
    }
    for (const kept of result.keptLastGood) {
      if (!this.#kept.has(kept)) log.warn({ kept }, `keeping the last good version of ${kept}`);
    }
    this.#kept = new Set(result.keptLastGood);
  }
}
