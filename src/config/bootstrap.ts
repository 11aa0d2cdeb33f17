/**
 * First start: give an empty store the three objects svc needs, and an existing store the
 * generated secrets it lacks (server key, admin password).
 *
 * The clear admin password goes only to the Secret svc-initial-admin-secret, never to a log
 * line or an error, and is written before its hash. Two processes starting on one store take
 * turns under a lock file, so the password and the hash always come from the same process.
 * Existing files are only ever patched through the Secret write path (lock + re-read + atomic
 * replace), so their comments and formatting stay. A svc-secret that is on disk but rejected
 * (or maybe in a file that does not parse) is never "completed": see settingsSecretUnusable.
 */
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import bcrypt from 'bcrypt';
import type { Logger } from 'pino';
import { SvcError } from '../errors.js';
import { writeFileAtomic } from '../lib/atomic-file.js';
import { errorCode, withFileLock } from '../lib/file-lock.js';
import { EMPTY_MEMORY, loadDirectory, type LoadResult } from './load-dir.js';
import { INITIAL_ADMIN_SECRET, PART_OF_LABEL, PART_OF_VALUE, RBAC_CM, SETTINGS_CM, SETTINGS_SECRET, type StoreSnapshot } from './manifests.js';
import { assertOwnKeys, ownKeysOnly } from './own-secrets.js';
import { formatProblem } from './problems.js';
import { refuseStoresOutsideTheirFiles } from './store-files.js';
import { updateSecretOnDisk } from './secret-writer.js';
import type { SecretPatch } from './store.js';

export const SERVER_SECRET_KEY = 'server.secretkey';
export const ADMIN_PASSWORD_KEY = 'admin.password';
export const ADMIN_PASSWORD_MTIME_KEY = 'admin.passwordMtime';
export const INITIAL_PASSWORD_KEY = 'password';
/** bcrypt cost for the generated admin password; the same cost as passwords set later. */
export const BCRYPT_COST = 10;
const SECRET_KEY_BYTES = 32;
/** 18 random bytes print as 24 base64url characters: well over the 16 the design asks for. */
const PASSWORD_BYTES = 18;

export interface BootstrapOptions {
  readonly dir: string;
  readonly log: Logger;
  readonly randomBytes?: (size: number) => Buffer;
  readonly now?: () => Date;
  /**
   * The external URL written as `url` into a new svc-cm: the address svc will listen on, so that
   * SSO callbacks reach it (DEFAULT_FIRST_URL when not given).
   */
  readonly url?: string;
}

/** The `url` of a new svc-cm when the start gives none (the default listen address). */
export const DEFAULT_FIRST_URL = 'http://127.0.0.1:8080';

export interface BootstrapResult {
  /** Files written from scratch. */
  readonly createdFiles: readonly string[];
  /** `secret/key` of every key added to an existing store. */
  readonly addedKeys: readonly string[];
  /** Where the clear initial admin password is, when one was generated. */
  readonly initialAdminSecretFile?: string;
}

interface Bootstrap {
  readonly dir: string;
  readonly log: Logger;
  readonly random: (size: number) => Buffer;
  readonly now: () => Date;
  readonly url: string;
}

/** The lock two processes starting on one store take in turn; a dot file, so the loader skips it. */
const BOOTSTRAP_LOCK_TARGET = '.svc-bootstrap';

export async function ensureInitialConfig(options: BootstrapOptions): Promise<BootstrapResult> {
  const run: Bootstrap = {
    dir: path.resolve(options.dir),
    log: options.log,
    random: options.randomBytes ?? cryptoRandomBytes,
    now: options.now ?? (() => new Date()),
    url: options.url ?? DEFAULT_FIRST_URL,
  };
  // A complete store is left alone without taking a lock: it may be mounted read-only.
  const first = await loadDirectory(run.dir, EMPTY_MEMORY);
  // Before anything is written: a store defined outside its own file refuses the start (store-files.ts).
  refuseStoresOutsideTheirFiles(run.dir, first);
  if (secretComplete(first.snapshot)) {
    warnMissingConfigMaps(first.snapshot, run);
    return { createdFiles: [], addedKeys: [] };
  }
  if (settingsSecretUnusable(first, run)) return { createdFiles: [], addedKeys: [] };
  try {
    await mkdir(run.dir, { recursive: true });
    return await withFileLock(path.join(run.dir, BOOTSTRAP_LOCK_TARGET), async () => {
      // Read again inside the lock: another process may have completed the store meanwhile.
      const loaded = await loadDirectory(run.dir, EMPTY_MEMORY);
      if (settingsSecretUnusable(loaded, run)) return { createdFiles: [], addedKeys: [] };
      const now = loaded.snapshot;
      const found = [now.configMaps.has(SETTINGS_CM), now.configMaps.has(RBAC_CM), now.secrets.has(SETTINGS_SECRET)];
      if (!found.includes(true)) return createFreshStore(run);
      warnMissingConfigMaps(now, run);
      return completeSecret(run, now);
    });
  } catch (err: unknown) {
    // A bare fs error (EACCES on the lock, ENOSPC) does not say that it stopped the first start.
    // Our own errors (a Secret write that could not land) already name the file and the cause.
    if (err instanceof SvcError || errorCode(err) === undefined || !(err instanceof Error)) throw err;
    throw new Error(`cannot create the initial configuration in ${run.dir}: ${err.message}`, { cause: err });
  }
}

function secretComplete(snapshot: StoreSnapshot): boolean {
  const data = snapshot.secrets.get(SETTINGS_SECRET)?.data ?? {};
  return Boolean(data[SERVER_SECRET_KEY]) && Boolean(data[ADMIN_PASSWORD_KEY]);
}

/**
 * svc-secret is missing from this load, but not from the disk: it was rejected (a key with no
 * value, non-base64 data), or a file that cannot be read or parsed may hold it (the rule the
 * Secret writer uses too). Its admin.password hash may well be there, so "completing" it would
 * write a new initial password that matches no hash and lock the admin out; nothing is written,
 * and the problem is logged here and reported by the store's loader until someone fixes it.
 */
function settingsSecretUnusable(result: LoadResult, run: Bootstrap): boolean {
  if (result.snapshot.secrets.has(SETTINGS_SECRET)) return false;
  const rejected = result.rejectedObjects.filter((r) => r.key === `Secret/${SETTINGS_SECRET}`).flatMap((r) => r.problems);
  const unreadable = result.problems.filter((p) => result.rejectedFiles.includes(p.source) && p.path.length === 0);
  const problems = [...rejected, ...unreadable].map(formatProblem);
  if (problems.length === 0) return false;
  run.log.error(
    { dir: run.dir, problems },
    `Secret ${SETTINGS_SECRET} cannot be loaded (${problems.join('; ')}); its generated keys and ${INITIAL_ADMIN_SECRET} are left as they are until it is fixed`,
  );
  return true;
}

/** Not created: an operator who has some of the store in git decides what goes in the rest. */
function warnMissingConfigMaps(snapshot: StoreSnapshot, run: Bootstrap): void {
  const missing = [SETTINGS_CM, RBAC_CM].filter((name) => !snapshot.configMaps.has(name));
  if (missing.length > 0) run.log.warn({ dir: run.dir, missing }, `ConfigMap ${missing.join(', ')} not found; using defaults`);
}

/** `iat` of a session is whole seconds; a mtime with milliseconds would reject its first second. */
export function passwordMtime(now: () => Date): string {
  return new Date(Math.floor(now().getTime() / 1000) * 1000).toISOString();
}

/**
 * The ConfigMaps, then the clear password, then the Secret with its hash: a failure between the
 * last two leaves a password that matches no hash (the next start makes another), never a hash
 * whose password nobody has.
 */
async function createFreshStore(run: Bootstrap): Promise<BootstrapResult> {
  const password = newPassword(run.random);
  const secret = {
    [SERVER_SECRET_KEY]: run.random(SECRET_KEY_BYTES).toString('base64url'),
    [ADMIN_PASSWORD_KEY]: await bcrypt.hash(password, BCRYPT_COST),
    [ADMIN_PASSWORD_MTIME_KEY]: passwordMtime(run.now),
  };
  assertOwnKeys(Object.keys(secret));
  const createdFiles = [
    await createFile(run.dir, `${SETTINGS_CM}.yaml`, settingsCmText(run.url), 0o644),
    await createFile(run.dir, `${RBAC_CM}.yaml`, RBAC_CM_TEXT, 0o644),
  ];
  const adminFile = await writeInitialPassword(run.dir, run.log, password);
  createdFiles.push(await createFile(run.dir, `${SETTINGS_SECRET}.yaml`, secretText(SETTINGS_SECRET, SETTINGS_SECRET_COMMENT, secret), 0o600));
  run.log.info({ dir: run.dir, files: createdFiles }, 'created the initial configuration');
  return { createdFiles: [...createdFiles, adminFile], addedKeys: [], initialAdminSecretFile: adminFile };
}

async function createFile(dir: string, name: string, text: string, mode: number): Promise<string> {
  const file = path.join(dir, name);
  try {
    // exclusive: a file of that name that holds something else (or does not parse) is not ours to replace.
    await writeFileAtomic(file, text, { mode, exclusive: true });
  } catch (err: unknown) {
    if (errorCode(err) === 'EEXIST') throw new Error(`cannot create the initial configuration: ${file} already exists`, { cause: err });
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`cannot create the initial configuration: cannot write ${file} (${reason})`, { cause: err });
  }
  return file;
}

/**
 * Adds what svc-secret lacks. The clear password is written before the hash, for the reason
 * given at createFreshStore; the keys are added inside the Secret's lock, only where still
 * missing.
 */
async function completeSecret(run: Bootstrap, snapshot: StoreSnapshot): Promise<BootstrapResult> {
  const before = snapshot.secrets.get(SETTINGS_SECRET)?.data ?? {};
  const password = before[ADMIN_PASSWORD_KEY] ? undefined : newPassword(run.random);
  const adminFile = password === undefined ? undefined : await writeInitialPassword(run.dir, run.log, password);
  const hash = password === undefined ? undefined : await bcrypt.hash(password, BCRYPT_COST);
  let added: string[] = [];
  const mutate = (current: Readonly<Record<string, string>>): SecretPatch => {
    const set: Record<string, string> = {};
    if (!current[SERVER_SECRET_KEY]) set[SERVER_SECRET_KEY] = run.random(SECRET_KEY_BYTES).toString('base64url');
    if (hash !== undefined && !current[ADMIN_PASSWORD_KEY]) {
      set[ADMIN_PASSWORD_KEY] = hash;
      set[ADMIN_PASSWORD_MTIME_KEY] = passwordMtime(run.now);
    }
    added = Object.keys(set).map((key) => `${SETTINGS_SECRET}/${key}`);
    return { set };
  };
  const result = await updateSecretOnDisk({ dir: run.dir, name: SETTINGS_SECRET, mutate: ownKeysOnly(mutate), log: run.log });
  if (added.length > 0) run.log.info({ file: result.file, keys: added }, `added generated keys to Secret ${SETTINGS_SECRET}`);
  const createdFiles = result.created ? [result.file] : [];
  if (adminFile === undefined) return { createdFiles, addedKeys: added };
  return { createdFiles: [...createdFiles, adminFile], addedKeys: added, initialAdminSecretFile: adminFile };
}

async function writeInitialPassword(dir: string, log: Logger, password: string): Promise<string> {
  const result = await updateSecretOnDisk({
    dir,
    log,
    name: INITIAL_ADMIN_SECRET,
    mutate: () => ({ set: { [INITIAL_PASSWORD_KEY]: password } }),
  });
  log.info(
    { file: result.file },
    `initial admin password written to ${result.file} (secret ${INITIAL_ADMIN_SECRET}, key ${INITIAL_PASSWORD_KEY})`,
  );
  return result.file;
}

function newPassword(random: (size: number) => Buffer): string {
  return random(PASSWORD_BYTES).toString('base64url');
}

function secretText(name: string, comment: string, values: Readonly<Record<string, string>>): string {
  const data = Object.entries(values)
    .map(([key, value]) => `  ${key}: ${Buffer.from(value, 'utf8').toString('base64')}\n`)
    .join('');
  return `${comment}apiVersion: v1
kind: Secret
metadata:
  name: ${name}
  labels:
    ${PART_OF_LABEL}: ${PART_OF_VALUE}
type: Opaque
data:
${data}`;
}

const SETTINGS_SECRET_COMMENT = `# Secrets of svc, generated on first start. svc updates keys here in place (passwords,
# tokens); it keeps the comments and layout of this file. Values under data are base64;
# put plain text under stringData instead if you prefer.
`;

function settingsCmText(url: string): string {
  return `# Settings of svc, created on first start. Edit freely: changes apply within 2 seconds.
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${SETTINGS_CM}
  labels:
    ${PART_OF_LABEL}: ${PART_OF_VALUE}
data:
  # The external URL of svc, as browsers reach it (SSO callbacks go there). Written from the
  # listen address of the first start: change it when svc is behind a proxy or a DNS name.
  url: ${url}
  # Local accounts: comma-separated capabilities (apiKey, login); passwords live in svc-secret.
  # accounts.alice: apiKey, login
  # accounts.alice.enabled: "true"
  # UI extensions proxied under /api/v1/extensions/<name>:
  # extension.config: |
  #   extensions:
  #     - name: metrics
  #       enabled: true
  #       backend:
  #         services:
  #           - url: http://127.0.0.1:9090
`;
}

export const RBAC_CM_TEXT = `# Rights of svc, created on first start. Edit freely: changes apply within 2 seconds.
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${RBAC_CM}
  labels:
    ${PART_OF_LABEL}: ${PART_OF_VALUE}
data:
  # The role of a subject that no rule below names.
  policy.default: role:readonly
  # One rule a line: p, <subject>, <resource>, <action>, <object>, <access>
  # An extension call is checked as: extensions, *, <project>/<extension>. A call that names no
  # application has the project *, so this rule allows alice every call to the extension metrics:
  #   p, role:metrics-viewer, extensions, *, */metrics, allow
  #   g, alice, role:metrics-viewer
  # A rule for one project (default/metrics) allows the calls that name an Application of that
  # project in the Svc-Application-Name header: examples/extension-two-clusters in the svc
  # repository has such an Application, its cluster Secret and a backend per cluster.
  policy.csv: ""
`;
