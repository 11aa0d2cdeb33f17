/**
 * Read-modify-write of one ConfigMap's `data` on disk, for the offline account commands
 * (`svc-server account disable|enable|create`): the server itself never writes a ConfigMap.
 *
 * The same discipline as secret-writer.ts: the file is read again under `<file>.lock` (the lock
 * every svc writer of that file takes), the patch is applied to that text with the
 * formatting-preserving edit of yaml-edit.ts (comments, key order and the other documents stay
 * as they were), and the result replaces the file atomically. A file that does not parse is
 * never written. Unlike a Secret's, the file's mode is kept as it is: a ConfigMap holds no secret.
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../lib/atomic-file.js';
import { withFileLock, type LockOptions } from '../lib/file-lock.js';
import { readRegularFile } from '../lib/regular-file.js';
import { listYamlFiles } from './load-dir.js';
import type { SecretFileChange } from './secret-writer.js';
import { patchedValues, type SecretPatch } from './store.js';
import { asSecretWriteFailure, SecretWriteFailed } from './write-failure.js';
import { applyConfigMapPatch, configMapValues, findConfigMapDoc, newConfigMapText, parseYamlFile, replaceDocument } from './yaml-edit.js';

export type DataMutation = (current: Readonly<Record<string, string>>) => SecretPatch;

export interface UpdateConfigMapRequest {
  readonly dir: string;
  readonly name: string;
  readonly mutate: DataMutation;
  /** The file the loader read the ConfigMap from; checked under the lock, not trusted. */
  readonly hint?: string | undefined;
  readonly lock?: LockOptions;
}

export interface UpdateConfigMapResult {
  readonly file: string;
  readonly created: boolean;
  /** What the write replaced (restoreSecretFile() puts it back); undefined when nothing changed. */
  readonly change?: SecretFileChange;
}

const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** A new ConfigMap file: readable as the manifests beside it usually are. */
const NEW_FILE_MODE = 0o644;

/** Rejects with an `Unavailable` saying why when the write cannot land (write-failure.ts). */
export async function updateConfigMapOnDisk(request: UpdateConfigMapRequest): Promise<UpdateConfigMapResult> {
  if (!OBJECT_NAME.test(request.name)) throw new Error(`"${request.name}" is not a valid ConfigMap name`);
  try {
    const file = request.hint ?? (await locateConfigMap(request.dir, request.name));
    return file === undefined ? await createConfigMap(request) : await patchFile(file, request);
  } catch (err: unknown) {
    throw asSecretWriteFailure(request.name, err, 'ConfigMap');
  }
}

async function patchFile(file: string, request: UpdateConfigMapRequest): Promise<UpdateConfigMapResult> {
  const { name } = request;
  // Rename happens beside the real file, so a symlinked manifest stays a symlink.
  const target = await realpath(file);
  return withFileLock(
    target,
    async () => {
      const text = await readRegularFile(target);
      const parsed = parseYamlFile(text);
      if (!parsed.ok) throw new SecretWriteFailed(`cannot update ConfigMap ${name}: ${file} does not parse (${parsed.message}); fix the file first`);
      const index = findConfigMapDoc(parsed.docs, name);
      const doc = parsed.docs[index];
      if (doc === undefined) throw new SecretWriteFailed(`cannot update ConfigMap ${name}: it is no longer in ${file} (moved while this ran); nothing was written, run the command again`);
      applyConfigMapPatch(doc, request.mutate(configMapValues(doc)));
      const next = replaceDocument(text, parsed.docs, index);
      if (next === text) return { file, created: false };
      await writeFileAtomic(target, next, { mode: (await stat(target)).mode & 0o777 });
      return { file, created: false, change: { target, before: text, after: next } };
    },
    request.lock,
  );
}

/** `<dir>/<name>.yaml`, created only if no file has that name yet (another writer may have made it). */
async function createConfigMap(request: UpdateConfigMapRequest): Promise<UpdateConfigMapResult> {
  const file = path.join(path.resolve(request.dir), `${request.name}.yaml`);
  return withFileLock(
    file,
    async () => {
      const after = newConfigMapText(request.name, patchedValues({}, request.mutate({})));
      await writeFileAtomic(file, after, { mode: NEW_FILE_MODE, exclusive: true });
      return { file, created: true, change: { target: file, before: undefined, after } };
    },
    request.lock,
  );
}

/** The first file (path order, as the loader picks) holding ConfigMap `name`; refuses when a file that might hold it does not parse. */
async function locateConfigMap(dir: string, name: string): Promise<string | undefined> {
  const broken: string[] = [];
  for (const file of await listYamlFiles(dir)) {
    let text: string;
    try {
      text = await readRegularFile(file);
    } catch {
      continue; // gone, or no regular file: the loader skips it too
    }
    const parsed = parseYamlFile(text);
    if (!parsed.ok) broken.push(file);
    else if (findConfigMapDoc(parsed.docs, name) >= 0) return file;
  }
  if (broken.length > 0) throw new SecretWriteFailed(`cannot update ConfigMap ${name}: not found, and ${broken.join(', ')} does not parse (it may hold it); fix the file first`);
  return undefined;
}
