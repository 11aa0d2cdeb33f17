/**
 * Noticing changes under a directory: fs.watch for speed, a poll of mtimes for certainty.
 *
 * Each directory gets its own non-recursive fs.watch. Rejected: `fs.watch(dir, {recursive: true})`
 * — on Linux, Node 20 emulates it with per-file watches that are lost when an editor renames a
 * new version over a file, after which neither renames nor in-place writes to it are reported
 * (seen with Node 20.20). A directory watch (inotify on the directory) reports both.
 * fs.watch still misses events on network filesystems and cannot watch a directory that does
 * not exist yet, so a poll (stat of every manifest, once a second) bounds the delay of anything
 * the watchers miss. Events are debounced so an
 * editor's write-temp + rename (or a `git checkout` touching many files) becomes one reload;
 * a maximum wait keeps a steady stream of events from postponing the reload forever.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { directorySignature, listYamlFiles } from './load-dir.js';

export const DEFAULT_DEBOUNCE_MS = 100;
export const DEFAULT_POLL_MS = 1_000;
const MAX_WAIT_MS = 1_000;

export interface TreeWatchOptions {
  readonly dir: string;
  readonly log: Logger;
  readonly debounceMs: number;
  readonly pollMs: number;
  /** The signature of the last load; a poll that differs from it triggers a reload. */
  readonly loadedSignature: () => string;
  readonly onChange: () => void;
}

export interface TreeWatch {
  close(): void;
}

/** Names that can change the store: manifests, and directories (no extension). Not locks or temp files. */
function relevant(filename: string | null): boolean {
  if (filename === null) return true;
  const base = filename.split(/[\\/]/).pop() ?? filename;
  if (base.startsWith('.')) return false;
  return /\.ya?ml$/.test(base) || !base.includes('.');
}

export function watchTree(options: TreeWatchOptions): TreeWatch {
  const watchers = new Map<string, FSWatcher>();
  let timer: NodeJS.Timeout | undefined;
  let firstPending: number | undefined;
  let polling = false;
  let closed = false;

  const fire = (): void => {
    timer = undefined;
    firstPending = undefined;
    if (!closed) options.onChange();
  };
  const schedule = (): void => {
    if (closed) return;
    const now = Date.now();
    firstPending ??= now;
    if (timer !== undefined) clearTimeout(timer);
    const wait = now - firstPending >= MAX_WAIT_MS ? 0 : options.debounceMs;
    timer = setTimeout(fire, wait);
  };

  const unwatch = (dir: string): void => {
    watchers.get(dir)?.close();
    watchers.delete(dir);
  };
  const watchOne = (dir: string): void => {
    try {
      const watcher = watch(dir, { persistent: false }, (_event, filename) => {
        if (!relevant(filename)) return;
        schedule();
        // A new subdirectory needs its own watcher: look now rather than at the next poll.
        if (filename === null || !filename.includes('.')) void syncWatchers();
      });
      watcher.on('error', (err: unknown) => {
        // Typically the directory went away; the poll watches it again if it comes back.
        options.log.debug({ err, dir }, 'config directory watcher stopped');
        unwatch(dir);
        schedule();
      });
      watchers.set(dir, watcher);
    } catch (err: unknown) {
      options.log.debug({ err, dir }, 'config directory not watchable; polling it');
    }
  };
  const syncWatchers = async (): Promise<void> => {
    const dirs = new Set(await listDirectories(options.dir));
    if (closed) return;
    for (const dir of watchers.keys()) if (!dirs.has(dir)) unwatch(dir);
    for (const dir of dirs) if (!watchers.has(dir)) watchOne(dir);
  };

  const poll = async (): Promise<void> => {
    if (polling || closed) return;
    polling = true;
    try {
      await syncWatchers();
      const signature = await directorySignature(await listYamlFiles(options.dir));
      if (signature !== options.loadedSignature()) schedule();
    } catch (err: unknown) {
      options.log.warn({ err, dir: options.dir }, 'config directory poll failed');
    } finally {
      polling = false;
    }
  };

  void poll();
  const interval = setInterval(() => void poll(), options.pollMs);
  // The store must not keep a one-shot command (svc-server validate) alive.
  interval.unref();

  return {
    close(): void {
      closed = true;
      clearInterval(interval);
      if (timer !== undefined) clearTimeout(timer);
      for (const dir of [...watchers.keys()]) unwatch(dir);
    },
  };
}

/** `root` and every directory below it, skipping dot directories and symlinks (as the loader does). */
async function listDirectories(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return; // gone or not yet there
    }
    out.push(dir);
    for (const entry of entries) {
      if (entry.isDirectory() && !entry.name.startsWith('.')) await walk(path.join(dir, entry.name));
    }
  };
  await walk(path.resolve(root));
  return out;
}
