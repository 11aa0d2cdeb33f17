/**
 * First start: give an empty store the three objects svc needs, and an existing store the
 * generated secrets it lacks (server key, admin password).
 *
 * The clear admin password goes only to the Secret svc-initial-admin-secret, never to a log
 * line or an error. Existing files are only ever patched through the Secret write path
 * (lock + re-read + atomic replace), so their comments and formatting stay.
 */
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import type { Logger } from 'pino';
import { writeFileAtomic } from './atomic-file.js';
import { EMPTY_MEMORY, loadDirectory } from './load-dir.js';
import { INITIAL_ADMIN_SECRET, PART_OF_LABEL, PART_OF_VALUE, RBAC_CM, SETTINGS_CM, SETTINGS_SECRET } from './manifests.js';
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
}

export interface BootstrapResult {
  /** Files written from scratch. */
  readonly createdFiles: readonly string[];
  /** `secret/key` of every key added to an existing store. */
  readonly addedKeys: readonly string[];
  /** Where the clear initial admin password is, when one was generated. */
  readonly initialAdminSecretFile?: string;
}

export async function ensureInitialConfig(options: BootstrapOptions): Promise<BootstrapResult> {
  const dir = path.resolve(options.dir);
  const random = options.randomBytes ?? cryptoRandomBytes;
  const now = options.now ?? (() => new Date());
  const { snapshot } = await loadDirectory(dir, EMPTY_MEMORY);
  const found = [snapshot.configMaps.has(SETTINGS_CM), snapshot.configMaps.has(RBAC_CM), snapshot.secrets.has(SETTINGS_SECRET)];
  if (!found.includes(true)) return createFreshStore(dir, options.log, random, now);

  if (!found[0] || !found[1]) {
    // Not created: an operator who has some of the store in git decides what goes in the rest.
    const missing = [SETTINGS_CM, RBAC_CM].filter((_, i) => found[i] !== true);
    options.log.warn({ dir, missing }, `ConfigMap ${missing.join(', ')} not found; using defaults`);
  }
  return completeSecret(dir, options.log, random, now);
}

async function createFreshStore(
  dir: string,
  log: Logger,
  random: (size: number) => Buffer,
  now: () => Date,
): Promise<BootstrapResult> {
  await mkdir(dir, { recursive: true });
  const password = newPassword(random);
  const secret = {
    [SERVER_SECRET_KEY]: random(SECRET_KEY_BYTES).toString('base64url'),
    [ADMIN_PASSWORD_KEY]: await bcrypt.hash(password, BCRYPT_COST),
    [ADMIN_PASSWORD_MTIME_KEY]: now().toISOString(),
  };
  const files: [string, string, number][] = [
    [`${SETTINGS_CM}.yaml`, SETTINGS_CM_TEXT, 0o644],
    [`${RBAC_CM}.yaml`, RBAC_CM_TEXT, 0o644],
    [`${SETTINGS_SECRET}.yaml`, secretText(SETTINGS_SECRET, SETTINGS_SECRET_COMMENT, secret), 0o600],
  ];
  const createdFiles: string[] = [];
  for (const [name, text, mode] of files) {
    const file = path.join(dir, name);
    // exclusive: a file of that name that holds something else (or does not parse) is not ours to replace.
    await writeFileAtomic(file, text, { mode, exclusive: true }).catch((err: unknown) => {
      throw new Error(`cannot create the initial configuration: ${file} already exists`, { cause: err });
    });
    createdFiles.push(file);
  }
  const adminFile = await writeInitialPassword(dir, log, password);
  log.info({ dir, files: createdFiles }, 'created the initial configuration');
  return { createdFiles: [...createdFiles, adminFile], addedKeys: [], initialAdminSecretFile: adminFile };
}

/** Adds what svc-secret lacks; decided inside the lock, so two starting processes add it once. */
async function completeSecret(
  dir: string,
  log: Logger,
  random: (size: number) => Buffer,
  now: () => Date,
): Promise<BootstrapResult> {
  let password: string | undefined;
  let added: string[] = [];
  const mutate = (current: Readonly<Record<string, string>>): SecretPatch => {
    const set: Record<string, string> = {};
    if (!current[SERVER_SECRET_KEY]) set[SERVER_SECRET_KEY] = random(SECRET_KEY_BYTES).toString('base64url');
    if (!current[ADMIN_PASSWORD_KEY]) {
      password = newPassword(random);
      set[ADMIN_PASSWORD_KEY] = bcrypt.hashSync(password, BCRYPT_COST);
      set[ADMIN_PASSWORD_MTIME_KEY] = now().toISOString();
    } else password = undefined;
    added = Object.keys(set).map((key) => `${SETTINGS_SECRET}/${key}`);
    return { set };
  };
  const result = await updateSecretOnDisk({ dir, name: SETTINGS_SECRET, mutate });
  if (added.length > 0) log.info({ file: result.file, keys: added }, `added generated keys to Secret ${SETTINGS_SECRET}`);
  const createdFiles = result.created ? [result.file] : [];
  if (password === undefined) return { createdFiles, addedKeys: added };
  const adminFile = await writeInitialPassword(dir, log, password);
  return { createdFiles: [...createdFiles, adminFile], addedKeys: added, initialAdminSecretFile: adminFile };
}

async function writeInitialPassword(dir: string, log: Logger, password: string): Promise<string> {
  const result = await updateSecretOnDisk({
    dir,
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

const SETTINGS_CM_TEXT = `# Settings of svc, created on first start. Edit freely: changes apply within 2 seconds.
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${SETTINGS_CM}
  labels:
    ${PART_OF_LABEL}: ${PART_OF_VALUE}
data:
  # The external URL of svc (used for SSO callbacks).
  url: http://127.0.0.1:8080
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

const RBAC_CM_TEXT = `# Rights of svc, created on first start. Edit freely: changes apply within 2 seconds.
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
  #   p, role:metrics-viewer, extensions, *, default/metrics, allow
  #   g, alice, role:metrics-viewer
  policy.csv: ""
`;
