/**
 * A Secret write that cannot land is the store's trouble, not a bug: a 503 (`Unavailable`) whose
 * message says why, never a bare 500. Three causes: the file does not parse (an operator's edit),
 * another writer holds the lock too long (file-lock.ts), the file is no regular file or too large
 * (regular-file.ts), and the filesystem refuses (full disk, read-only mount, permissions). Errors of the caller's own mutation (a `Conflict`) and other
 * domain errors pass through as they are; an error without a filesystem code stays a bug (500).
 */
import { SvcError, Unavailable } from '../errors.js';
import { errorCode, LockTimeout } from '../lib/file-lock.js';
import { NotReadableFile } from '../lib/regular-file.js';

export class SecretWriteFailed extends Unavailable {}

/** What an operator should read for the usual errno codes; others are named by their code. */
const FILESYSTEM_REASONS: Readonly<Record<string, string>> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the filesystem is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'an I/O error',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
  ENAMETOOLONG: 'a file name is too long',
};

/**
 * `err` as the client should see it. Only the errno code is used, never Node's message, which
 * carries the path of a temp file and says nothing an operator cannot read from the code.
 */
export function asSecretWriteFailure(name: string, err: unknown, kind: 'Secret' | 'ConfigMap' = 'Secret'): unknown {
  if (err instanceof SvcError) return err;
  if (err instanceof LockTimeout) return new SecretWriteFailed(err.message, { cause: err });
  if (err instanceof NotReadableFile) return new SecretWriteFailed(`cannot update ${kind} ${name}: ${err.file} ${err.message}`, { cause: err });
  const code = errorCode(err);
  if (code === undefined || !/^E[A-Z0-9]+$/.test(code)) return err;
  const reason = FILESYSTEM_REASONS[code];
  return new SecretWriteFailed(`${kind} ${name} could not be written: ${reason === undefined ? code : `${reason} (${code})`}`, { cause: err });
}
