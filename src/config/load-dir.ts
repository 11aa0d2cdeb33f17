/**
 * One load of a manifest directory into a StoreSnapshot, remembering what was last good.
 *
 * Two levels of rejection (DESIGN.md §2): a file whose YAML does not parse is rejected whole and
 * its last good documents stand in for it; an object that parses but is malformed is left out
 * and its last good version (by kind and name) stands in for it. A file that defines one of the
 * stores (svc-cm, svc-rbac-cm, svc-secret, svc-initial-admin-secret) outside that store's own file
 * is rejected whole too (store-files.ts). Other duplicates across files: the first file in sorted
 * path order wins, so the outcome never depends on readdir order.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationObject, ConfigMapObject, SecretObject, StoreSnapshot } from './manifests.js';
import { objectKey, readManifest } from './manifests.js';
import { errorCode } from '../lib/file-lock.js';
import { ProblemSink, type ConfigProblem } from './problems.js';
import { NotReadableFile, readRegularFile } from '../lib/regular-file.js';
import { documentsToJS, parseYamlFile } from './yaml-edit.js';
import { recordDataOrigins } from './value-origin.js';
import { storesOutsideTheirFiles } from './store-files.js';
import type { Document } from 'yaml';

type StoreObject =
  | { readonly kind: 'ConfigMap'; readonly object: ConfigMapObject }
  | { readonly kind: 'Secret'; readonly object: SecretObject }
  | { readonly kind: 'Application'; readonly object: ApplicationObject };

/** What survives between loads: the last good documents of each file and the last good objects. */
export interface LoadMemory {
  readonly files: ReadonlyMap<string, readonly unknown[]>;
  readonly objects: ReadonlyMap<string, StoreObject>;
}

/** An object that parsed but was malformed: `key` as in keptLastGood (`Secret/name`), and where. */
export interface RejectedObject {
  readonly key: string;
  readonly file: string;
  readonly problems: readonly ConfigProblem[];
}

export const EMPTY_MEMORY: LoadMemory = { files: new Map(), objects: new Map() };

export interface LoadResult {
  readonly snapshot: StoreSnapshot;
  readonly memory: LoadMemory;
  readonly problems: readonly ConfigProblem[];
  /** Which stand-ins were used, for the log: `file` or `ConfigMap/name`. */
  readonly keptLastGood: readonly string[];
  /**
   * Files that could not be read or did not parse (whatever they hold is not in this load), and
   * objects rejected on their own, with the problems that rejected them. A writer checks these
   * to learn whether its write is in force; the first start, whether svc-secret is really missing.
   */
  readonly rejectedFiles: readonly string[];
  readonly rejectedObjects: readonly RejectedObject[];
  /**
   * The problems of files rejected because they define a store outside its own file (also in
   * `problems`): a start with any is refused (store-files.ts); a running store keeps those
   * files' last good documents, as for a file that does not parse.
   */
  readonly misplacedStores: readonly ConfigProblem[];
  /** The directory's signature taken before reading: a later change always shows as a difference. */
  readonly signature: string;
}

const YAML_FILE = /\.ya?ml$/;

/**
 * Every `*.yaml`/`*.yml` below `dir`, sorted. Names starting with a dot are skipped: our temp
 * files, editors' swap files, and the `..data` links of a Kubernetes volume mount (which would
 * otherwise show every file twice). Symlinked files are followed, symlinked directories are not
 * (no cycles); what a name turns out to be (a FIFO, a device) is checked when it is read
 * (regular-file.ts). A missing directory is an empty store. A subdirectory that cannot be read
 * (the `lost+found` of a mounted volume, a private folder) is skipped and passed to `onSkipped`:
 * one such folder must not stop the server from starting. The store's own directory is not skipped.
 */
export async function listYamlFiles(dir: string, onSkipped?: (subdir: string, code: string) => void): Promise<string[]> {
  const out: string[] = [];
  const root = path.resolve(dir);
  const walk = async (current: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch (err: unknown) {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      if (current === root || code === undefined) throw err;
      onSkipped?.(current, code);
      return;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if ((entry.isFile() || entry.isSymbolicLink()) && YAML_FILE.test(entry.name)) out.push(full);
    }
  };
  await walk(root);
  return out.sort();
}

/** Path, mtime, size and inode of each file: cheap to take every second, and changes on any write. */
export async function directorySignature(files: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    files.map(async (file) => {
      try {
        const info = await stat(file);
        return `${file}\0${info.mtimeMs}\0${info.size}\0${info.ino}`;
      } catch {
        return `${file}\0gone`;
      }
    }),
  );
  return parts.join('\n');
}

export async function loadDirectory(dir: string, memory: LoadMemory): Promise<LoadResult> {
  const sink = new ProblemSink();
  const files = await listYamlFiles(dir, (subdir, code) => sink.add(subdir, [], `cannot be read (${code}); its files are skipped`));
  const signature = await directorySignature(files);
  const keptLastGood: string[] = [];
  const rejectedFiles: string[] = [];
  const fileDocs = new Map<string, readonly unknown[]>();
  for (const file of files) {
    const docs = await readFileDocs(file, sink);
    if (docs === 'gone') continue;
    if (docs !== undefined) fileDocs.set(file, docs);
    else {
      rejectedFiles.push(file);
      const previous = memory.files.get(file);
      if (previous !== undefined) {
        fileDocs.set(file, previous);
        keptLastGood.push(file);
      }
    }
  }
  const misplacedStores = rejectStoresOutsideTheirFiles(fileDocs, memory, { sink, keptLastGood, rejectedFiles });
  return { ...loadDocuments(fileDocs, memory, sink, keptLastGood), rejectedFiles, misplacedStores, signature };
}

/**
 * Takes out of `fileDocs` every file that defines a store outside its own file, putting its last
 * good documents in its place. A stand-in can itself clash with another file's new version (both
 * define svc-secret); it is then dropped too, so this ends. The files keep their path order.
 */
function rejectStoresOutsideTheirFiles(
  fileDocs: Map<string, readonly unknown[]>,
  memory: LoadMemory,
  out: { readonly sink: ProblemSink; readonly keptLastGood: string[]; readonly rejectedFiles: string[] },
): ConfigProblem[] {
  const misplaced: ConfigProblem[] = [];
  const reported = new Set<string>();
  for (let found = storesOutsideTheirFiles(fileDocs); found.size > 0; found = storesOutsideTheirFiles(fileDocs)) {
    for (const [file, problems] of found) {
      for (const problem of problems) {
        const text = `${file}\0${problem.message}`;
        if (reported.has(text)) continue;
        reported.add(text);
        misplaced.push(problem);
        out.sink.add(problem.source, problem.path, problem.message);
      }
      const previous = memory.files.get(file);
      const first = !out.rejectedFiles.includes(file);
      if (first) out.rejectedFiles.push(file);
      if (first && previous !== undefined) {
        fileDocs.set(file, previous);
        if (!out.keptLastGood.includes(file)) out.keptLastGood.push(file);
      } else {
        fileDocs.delete(file);
        const kept = out.keptLastGood.indexOf(file);
        if (kept >= 0) out.keptLastGood.splice(kept, 1);
      }
    }
  }
  return misplaced;
}

/** What a load gives whatever the source: a directory's files or the Kubernetes API's objects. */
export type DocumentsLoad = Omit<LoadResult, 'rejectedFiles' | 'misplacedStores' | 'signature'>;

/**
 * The one code path after the source: the documents of each source (a file, or one object read
 * from the Kubernetes API, named like `kubernetes:secrets/ns/name`) to a snapshot, with the same
 * per-object rejections, last-good stand-ins and duplicate rule for both stores.
 */
export function loadDocuments(
  sourceDocs: ReadonlyMap<string, readonly unknown[]>,
  memory: LoadMemory,
  sink: ProblemSink = new ProblemSink(),
  keptLastGood: string[] = [],
): DocumentsLoad {
  const rejectedObjects: RejectedObject[] = [];
  const objects = collectObjects(sourceDocs, memory, sink, keptLastGood, rejectedObjects);
  return {
    snapshot: toSnapshot(objects),
    memory: { files: sourceDocs, objects },
    problems: sink.problems,
    keptLastGood,
    rejectedObjects,
  };
}

async function readFileDocs(file: string, sink: ProblemSink): Promise<readonly unknown[] | undefined | 'gone'> {
  let text: string;
  try {
    // Regular files under a size cap only (regular-file.ts): a FIFO would halt the load.
    text = await readRegularFile(file);
  } catch (err: unknown) {
    if (errorCode(err) === 'ENOENT') return 'gone'; // deleted since the listing; the next load agrees
    sink.add(file, [], err instanceof NotReadableFile ? err.message : `cannot be read: ${errorCode(err) ?? String(err)}`);
    return undefined;
  }
  const parsed = parseYamlFile(text);
  const values = parsed.ok ? documentsToJS(parsed.docs) : parsed;
  if (!values.ok) {
    sink.add(file, [], values.message);
    return undefined;
  }
  if (parsed.ok) values.values.forEach((value, i) => recordDataOrigins(file, text, parsed.docs[i] as Document, value, parsed.lineCounter));
  return values.values;
}

function collectObjects(
  fileDocs: ReadonlyMap<string, readonly unknown[]>,
  memory: LoadMemory,
  sink: ProblemSink,
  keptLastGood: string[],
  rejectedObjects: RejectedObject[],
): Map<string, StoreObject> {
  const objects = new Map<string, StoreObject>();
  for (const [file, docs] of fileDocs) {
    for (const doc of docs) {
      const key = objectKey(doc);
      const before = sink.problems.length;
      let found: StoreObject | undefined = readManifest(doc, file, sink);
      if (found === undefined && key !== undefined && sink.problems.length > before) {
        rejectedObjects.push({ key, file, problems: sink.problems.slice(before) });
        found = memory.objects.get(key);
        if (found !== undefined) keptLastGood.push(key);
      }
      if (found === undefined) continue;
      const foundKey = key ?? `${found.kind}/${found.object.name}`;
      const first = objects.get(foundKey);
      if (first !== undefined) {
        sink.add(file, [foundKey], `is also defined in ${first.object.file}, which wins (first in path order); this one is ignored`);
        continue;
      }
      objects.set(foundKey, found);
    }
  }
  return objects;
}

function toSnapshot(objects: ReadonlyMap<string, StoreObject>): StoreSnapshot {
  const configMaps = new Map<string, ConfigMapObject>();
  const secrets = new Map<string, SecretObject>();
  const applications: ApplicationObject[] = [];
  for (const found of objects.values()) {
    if (found.kind === 'ConfigMap') configMaps.set(found.object.name, found.object);
    else if (found.kind === 'Secret') secrets.set(found.object.name, found.object);
    else applications.push(found.object);
  }
  return { configMaps, secrets, applications };
}

/** A stable text of a snapshot's content, to tell a real change from a touched file. */
export function snapshotFingerprint(snapshot: StoreSnapshot): string {
  return JSON.stringify([[...snapshot.configMaps], [...snapshot.secrets], snapshot.applications]);
}
