/**
 * One resource of one namespace kept in memory by LIST and WATCH ("API Concepts: efficient
 * detection of changes"): list, then watch from the list's resourceVersion with bookmarks; a
 * watch that ends is resumed from the last version seen; `410 Gone` (the version is compacted
 * away) lists again; an error waits with a growing backoff and tries again, while what was last
 * read stays in `items`. Objects that `keep` refuses are never stored (other people's Secrets).
 */
import type { Logger } from 'pino';
import { KubeApiError, type KubeClient, type Plural, type WatchEvent } from './kube-client.js';

export type KubeObject = Record<string, unknown>;

export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 15_000 };
/** The API server ends a watch after this long; we then resume it (timeoutSeconds). */
const WATCH_SECONDS = 300;

export interface ReflectorOptions {
  readonly client: KubeClient;
  readonly plural: Plural;
  readonly namespace: string;
  readonly keep: (object: KubeObject) => boolean;
  readonly log: Logger;
  readonly backoff?: Backoff;
  /** Something in `items` changed. */
  readonly onChange: () => void;
  /** The API answered (true) or failed (false, with the error). */
  readonly onHealth: (up: boolean, err?: unknown) => void;
}

type WatchEnd = { readonly kind: 'closed' } | { readonly kind: 'expired' } | { readonly kind: 'failed'; readonly err: unknown };

export class Reflector {
  readonly items = new Map<string, KubeObject>();
  #version = '';
  #stopped = false;
  #stopWatch: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #firstSync: Promise<void>;
  #synced!: () => void;

  constructor(private readonly options: ReflectorOptions) {
    this.#firstSync = new Promise((resolve) => (this.#synced = resolve));
  }

  /** Starts the loop; resolves after the first successful list. */
  start(): Promise<void> {
    void this.#run();
    return this.#firstSync;
  }

  stop(): void {
    this.#stopped = true;
    this.#stopWatch?.();
    this.#wake?.();
  }

  /** An object svc itself just wrote: in force now, without waiting for its watch event. */
  upsert(object: KubeObject): void {
    const name = nameOf(object);
    if (name === undefined || !newerThanStored(object, this.items.get(name))) return;
    if (this.options.keep(object)) this.items.set(name, object);
    else this.items.delete(name);
    this.options.onChange();
  }

  async #run(): Promise<void> {
    let mustList = true;
    let delay = this.#backoff.initialMs;
    while (!this.#stopped) {
      try {
        if (mustList) {
          await this.#list();
          mustList = false;
          this.options.onHealth(true);
          this.#synced();
        }
        const started = Date.now();
        const end = await this.#watch();
        if (this.#stopped) return;
        if (end.kind === 'expired') {
          this.options.log.info({ resource: this.options.plural, version: this.#version }, 'watch expired (410 Gone); listing again');
          mustList = true;
        } else if (end.kind === 'failed') throw end.err;
        else if (Date.now() - started < 1000) await this.#sleep(this.#backoff.initialMs); // no tight loop on a server that closes at once
        delay = this.#backoff.initialMs;
      } catch (err: unknown) {
        if (this.#stopped) return;
        if (err instanceof KubeApiError && err.code === 410) mustList = true;
        this.options.onHealth(false, err);
        await this.#sleep(delay);
        delay = Math.min(delay * 2, this.#backoff.maxMs);
      }
    }
  }

  get #backoff(): Backoff {
    return this.options.backoff ?? DEFAULT_BACKOFF;
  }

  async #list(): Promise<void> {
    const list = await this.options.client.request('list', this.options.plural, undefined, undefined, this.options.namespace);
    const items = Array.isArray(list['items']) ? (list['items'] as KubeObject[]) : [];
    this.items.clear();
    for (const item of items) {
      const name = nameOf(item);
      if (name !== undefined && this.options.keep(item)) this.items.set(name, item);
    }
    this.#version = String((list['metadata'] as KubeObject | undefined)?.['resourceVersion'] ?? '');
    this.options.onChange();
  }

  #watch(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve) => {
      let ended: WatchEnd | undefined;
      const finish = (end: WatchEnd): void => {
        if (ended !== undefined) return;
        ended = end;
        this.#stopWatch?.();
        this.#stopWatch = undefined;
        resolve(end);
      };
      const query = { resourceVersion: this.#version, allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_SECONDS) };
      this.options.client
        .watch(this.options.plural, this.options.namespace, query, (event) => this.#event(event, finish), (err: unknown) => finish(err && !quietTooLong(err) ? { kind: 'failed', err: asApiError(err) } : { kind: 'closed' }))
        .then(
          (stop) => {
            if (ended !== undefined || this.#stopped) {
              stop();
              return finish({ kind: 'closed' });
            }
            this.#stopWatch = stop;
            this.options.onHealth(true); // the watch is open: the API answers again
          },
          (err: unknown) => finish({ kind: 'failed', err }),
        );
    });
  }

  #event(event: WatchEvent, finish: (end: WatchEnd) => void): void {
    const object = event.object;
    if (event.type === 'ERROR') {
      const code = Number(object['code']);
      if (code === 410) finish({ kind: 'expired' });
      else finish({ kind: 'failed', err: new KubeApiError(code, String(object['reason'] ?? 'Error'), String(object['message'] ?? 'watch error'), 'watch', this.options.plural) });
      return;
    }
    const version = (object['metadata'] as KubeObject | undefined)?.['resourceVersion'];
    if (typeof version === 'string') this.#version = version;
    if (event.type === 'BOOKMARK') return;
    const name = nameOf(object);
    if (name === undefined) return;
    const had = this.items.has(name);
    if (event.type === 'DELETED' || !this.options.keep(object)) this.items.delete(name);
    else this.items.set(name, object);
    if (had || this.items.has(name)) this.options.onChange();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

export function nameOf(object: KubeObject): string | undefined {
  const name = (object['metadata'] as KubeObject | undefined)?.['name'];
  return typeof name === 'string' ? name : undefined;
}

function versionOf(object: KubeObject | undefined): number {
  return Number((object?.['metadata'] as KubeObject | undefined)?.['resourceVersion'] ?? 0);
}

/**
 * Resource versions are opaque to clients in general; svc compares them only to not replace
 * what a watch already delivered with its own older write, and only when both are numbers.
 */
function newerThanStored(object: KubeObject, stored: KubeObject | undefined): boolean {
  const a = versionOf(object);
  const b = versionOf(stored);
  return Number.isNaN(a) || Number.isNaN(b) || a >= b;
}

/**
 * The client ends a watch that sent nothing for 30 s. The API server sends bookmarks only about
 * once a minute, so on a quiet namespace that is normal: the watch is resumed, not reported as an
 * outage. A server that is really gone fails the resume, and that is reported.
 */
function quietTooLong(err: unknown): boolean {
  return err instanceof Error && err.name === 'TimeoutError';
}

function asApiError(err: unknown): unknown {
  const status = (err as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number') return new KubeApiError(status, `HTTP ${status}`, err instanceof Error ? err.message : String(err), 'watch', '');
  return err;
}
