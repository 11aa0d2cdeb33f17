/**
 * Read-modify-write of one Secret on disk, safe against other writers in any process.
 *
 * Inside the lock the file is read again from disk (the caller's snapshot may be old: another
 * process can have written since), the patch is applied to that text, and the result replaces
 * the file atomically. The lock is `<file>.lock`, next to the file, so writers of different
 * files do not wait on each other.
 *
 * A Secret holds secret material (keys, password hashes, token records), so its file is written
 * readable by its owner only: a new file gets 0600, and an existing one that group or others
 * could read or write (0644 as an editor or `git checkout` leaves it) is tightened to it by the
 * write, which says so in the log (`log`, or the caller reads `tightenedFrom`).
 */
import { mkdir, realpath, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../lib/atomic-file.js';
import { errorCode, withFileLock, type LockOptions } from '../lib/file-lock.js';
import { listYamlFiles } from './load-dir.js';
import { NotReadableFile, readRegularFile } from '../lib/regular-file.js';
import { asSecretWriteFailure, SecretWriteFailed } from './write-failure.js';
import { patchedValues, type SecretPatch } from './store.js';
import {
  applySecretPatch,
  findSecretDoc,
  newSecretText,
  parseYamlFile,
  replaceDocument,
  secretValues,
} from './yaml-edit.js';

export type SecretMutation = (current: Readonly<Record<string, string>>) => SecretPatch;

export interface UpdateSecretRequest {
  readonly dir: string;
  readonly name: string;
  readonly mutate: SecretMutation;
  /** Where the caller last saw the Secret; checked, not trusted. */
  readonly hint?: string | undefined;
  readonly lock?: LockOptions;
  /** Told when the write tightened the file's mode. */
  readonly log?: { warn(fields: object, message: string): void };
}

export interface UpdateSecretResult {
  readonly file: string;
  readonly created: boolean;
  /** The mode the file had when this write tightened it to owner-only. */
  readonly tightenedFrom?: number;
  /** What the write replaced; undefined when nothing was written (the patch changed nothing). */
  readonly change?: SecretFileChange;
}

/** The bytes of one write to a Secret's file, before and after; `before` undefined: no file. */
export interface SecretFileChange {
  /** The real path written (symlinks resolved). */
  readonly target: string;
  readonly before: string | undefined;
  readonly after: string;
}

/** Kubernetes object names (DNS-1123 subdomain); also keeps the new file's path inside `dir`. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SECRET_FILE_MODE = 0o600;
/** Group and others: no bit of theirs is kept on a Secret's file. */
const NOT_OWNER = 0o077;

/** The mode a Secret's file is written with: its own, less anything group or others could do. */
async function ownerOnlyMode(target: string): Promise<{ mode: number; tightenedFrom?: number }> {
  const mode = (await stat(target)).mode & 0o777;
  return (mode & NOT_OWNER) === 0 ? { mode } : { mode: mode & ~NOT_OWNER, tightenedFrom: mode };
}

function describeMode(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/** Rejects with an `Unavailable` (503) when the write cannot land, saying why (write-failure.ts). */
export async function updateSecretOnDisk(request: UpdateSecretRequest): Promise<UpdateSecretResult> {
  if (!OBJECT_NAME.test(request.name)) throw new Error(`"${request.name}" is not a valid Secret name`);
  try {
    return await updateUnchecked(request);
  } catch (err: unknown) {
    throw asSecretWriteFailure(request.name, err);
  }
}

async function updateUnchecked(request: UpdateSecretRequest): Promise<UpdateSecretResult> {
  let candidate = request.hint ?? (await locateSecret(request.dir, request.name));
  // A Secret can move between files while we wait for the lock; three tries is plenty.
  for (let attempt = 0; attempt < 3; attempt++) {
    const shown = candidate ?? path.join(path.resolve(request.dir), `${request.name}.yaml`);
    if (candidate === undefined) await mkdir(request.dir, { recursive: true });
    // A symlinked file (a mounted or shared Secret) is written where it really is: the lock
    // and the rename must be beside the real file, or the rename would replace the link itself.
    const target = await realPath(shown);
    const outcome = await withFileLock(target, () => writeUnderLock(target, request, candidate === undefined), request.lock);
    if (outcome === 'moved') {
      candidate = await locateSecret(request.dir, request.name);
      continue;
    }
    if (outcome.tightenedFrom !== undefined) {
      request.log?.warn(
        { file: shown, secret: request.name, from: describeMode(outcome.tightenedFrom), to: describeMode(outcome.tightenedFrom & ~NOT_OWNER) },
        `Secret ${request.name}: ${shown} was readable or writable by others (mode ${describeMode(outcome.tightenedFrom)}); svc wrote secret material to it and made it ${describeMode(outcome.tightenedFrom & ~NOT_OWNER)}`,
      );
    }
    return { ...outcome, file: shown };
  }
  throw new SecretWriteFailed(`Secret ${request.name} keeps moving between files; not written`);
}

async function writeUnderLock(
  target: string,
  request: UpdateSecretRequest,
  creating: boolean,
): Promise<UpdateSecretResult | 'moved'> {
  if (creating) {
    // Another process may have created it (here or elsewhere) while we waited for the lock.
    const now = await locateSecret(request.dir, request.name);
    if (now !== undefined && (await realPath(now)) !== target) return 'moved';
  }
  const text = await readIfExists(target);
  if (text === undefined) {
    if (!creating) return 'moved';
    const after = newSecretText(request.name, patchedValues({}, request.mutate({})));
    await writeFileAtomic(target, after, { mode: SECRET_FILE_MODE, exclusive: true });
    return { file: target, created: true, change: { target, before: undefined, after } };
  }
  const parsed = parseYamlFile(text);
  if (!parsed.ok) {
    throw new SecretWriteFailed(`cannot update Secret ${request.name}: ${target} does not parse (${parsed.message}); fix the file first`);
  }
  const index = findSecretDoc(parsed.docs, request.name);
  const doc = parsed.docs[index];
  if (doc === undefined) return creating ? appendSecret(target, text, request) : 'moved';
  applySecretPatch(doc, request.mutate(secretValues(doc)));
  const next = replaceDocument(text, parsed.docs, index);
  if (next === text) return { file: target, created: false };
  const { mode, tightenedFrom } = await ownerOnlyMode(target);
  await writeFileAtomic(target, next, { mode });
  return { file: target, created: false, change: { target, before: text, after: next }, ...(tightenedFrom !== undefined ? { tightenedFrom } : {}) };
}

/** `<name>.yaml` exists but holds other objects: add the Secret as a new document at its end. */
async function appendSecret(target: string, text: string, request: UpdateSecretRequest): Promise<UpdateSecretResult> {
  const separator = text === '' || text.endsWith('\n') ? '' : '\n';
  const next = `${text}${separator}---\n${newSecretText(request.name, patchedValues({}, request.mutate({})))}`;
  const { mode, tightenedFrom } = await ownerOnlyMode(target);
  await writeFileAtomic(target, next, { mode });
  return { file: target, created: true, change: { target, before: text, after: next }, ...(tightenedFrom !== undefined ? { tightenedFrom } : {}) };
}

/**
 * Puts back the bytes a write replaced (or removes the file it created), under the same lock and
 * atomically, as the write itself. Only if the file still holds exactly what that write left:
 * a later write (another process, an editor) is not ours to discard, and then 'changed-since'
 * is returned and nothing is touched.
 */
export async function restoreSecretFile(change: SecretFileChange, lock?: LockOptions): Promise<'restored' | 'changed-since'> {
  return withFileLock(
    change.target,
    async () => {
      if ((await readIfExists(change.target)) !== change.after) return 'changed-since';
      if (change.before === undefined) await unlink(change.target);
      else await writeFileAtomic(change.target, change.before, { mode: (await stat(change.target)).mode & 0o777 });
      return 'restored';
    },
    lock,
  );
}

/**
 * The first file (path order, as the loader picks) holding Secret `name`. A file that does not
 * parse might hold it: then refuse, rather than create a second copy the loader would ignore.
 */
async function locateSecret(dir: string, name: string): Promise<string | undefined> {
  const broken: string[] = [];
  for (const file of await listYamlFiles(dir)) {
    const read = await readManifestText(file);
    // A FIFO or device is no manifest (the loader reports it); a file too large may be meant to hold it.
    if (read === undefined || ('refused' in read && read.refused === 'not-regular')) continue;
    const parsed = 'text' in read ? parseYamlFile(read.text) : undefined;
    if (parsed === undefined || !parsed.ok) broken.push(file);
    else if (findSecretDoc(parsed.docs, name) >= 0) return file;
  }
  if (broken.length > 0) {
    throw new SecretWriteFailed(`cannot update Secret ${name}: not found, and ${broken.join(', ')} does not parse (it may hold it); fix the file first`);
  }
  return undefined;
}

/** A listed file's text; undefined if it is gone, else why the loader would not read it either. */
async function readManifestText(file: string): Promise<{ readonly text: string } | { readonly refused: NotReadableFile['reason'] } | undefined> {
  try {
    const text = await readIfExists(file);
    return text === undefined ? undefined : { text };
  } catch (err: unknown) {
    if (err instanceof NotReadableFile) return { refused: err.reason };
    throw err;
  }
}

/** The file's real path, following symlinks; the path itself when it does not exist (yet). */
async function realPath(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch (err: unknown) {
    if (errorCode(err) === 'ENOENT') return file;
    throw err;
  }
}

/** Refuses (NotReadableFile) what the loader would not read either: a FIFO, a device, a huge file. */
async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readRegularFile(file);
  } catch (err: unknown) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}
