/**
 * First start in a cluster: svc-secret gets the generated keys it lacks (server.secretkey, the
 * admin password's hash), and the clear admin password goes to svc-initial-admin-secret.
 *
 * Replicas may start together, so no step assumes it is alone. The initial admin password is
 * written into svc-initial-admin-secret (shipped empty by deploy/, created only if missing) by a
 * write only one replica can win (409 for the others); every replica then hashes the password
 * that is in it, the winner's, so whichever hash lands in svc-secret matches the one password an
 * operator can read. The hash is added only where still
 * missing, through the store's optimistic write. ConfigMaps are not created: they are the
 * operator's (deploy/), and the Role does not allow it.
 */
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { Logger } from 'pino';
import { ADMIN_PASSWORD_KEY, ADMIN_PASSWORD_MTIME_KEY, BCRYPT_COST, INITIAL_PASSWORD_KEY, passwordMtime, SERVER_SECRET_KEY } from '../bootstrap.js';
import { INITIAL_ADMIN_SECRET, PART_OF_LABEL, PART_OF_VALUE, RBAC_CM, SETTINGS_CM, SETTINGS_SECRET } from '../manifests.js';
import { ownKeysOnly } from '../own-secrets.js';
import type { SecretPatch } from '../store.js';
import { KubeApiError, type KubeClient } from './kube-client.js';
import { sourceName, type KubeStore } from './kube-store.js';
import type { KubeObject } from './reflector.js';
import { asApiWriteFailure, SecretApiWriteFailed } from './secret-api-writer.js';

export interface KubeBootstrapOptions {
  readonly store: KubeStore;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly randomBytes?: (size: number) => Buffer;
  readonly now?: () => Date;
}

export interface KubeBootstrapResult {
  readonly addedKeys: readonly string[];
  /** True when this process wrote the initial admin password (into an empty or a new svc-initial-admin-secret). */
  readonly createdInitialAdminSecret: boolean;
}

export async function ensureInitialConfigInCluster(options: KubeBootstrapOptions): Promise<KubeBootstrapResult> {
  const { store, log } = options;
  const random = options.randomBytes ?? cryptoRandomBytes;
  const snapshot = store.current();
  const missingMaps = [SETTINGS_CM, RBAC_CM].filter((name) => !snapshot.configMaps.has(name));
  if (missingMaps.length > 0) log.warn({ namespace: store.namespace, missing: missingMaps }, `ConfigMap ${missingMaps.join(', ')} not found; using defaults`);
  const data = snapshot.secrets.get(SETTINGS_SECRET)?.data ?? {};
  if (data[SERVER_SECRET_KEY] && data[ADMIN_PASSWORD_KEY]) return { addedKeys: [], createdInitialAdminSecret: false };
  // Rejected, not missing: its hash may be there; a new password would match nothing (bootstrap.ts).
  const source = sourceName('secrets', store.namespace, SETTINGS_SECRET);
  const rejected = store.problems().filter((p) => p.source === source);
  if (rejected.length > 0 && !snapshot.secrets.has(SETTINGS_SECRET)) {
    log.error({ secret: SETTINGS_SECRET }, `Secret ${SETTINGS_SECRET} cannot be loaded; its generated keys and ${INITIAL_ADMIN_SECRET} are left as they are until it is fixed`);
    return { addedKeys: [], createdInitialAdminSecret: false };
  }
  const initial = data[ADMIN_PASSWORD_KEY] ? undefined : await initialPassword(options.client, random(18).toString('base64url'), log);
  const hash = initial === undefined ? undefined : await bcrypt.hash(initial.password, BCRYPT_COST);
  let added: string[] = [];
  await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current): SecretPatch => {
    const set: Record<string, string> = {};
    if (!current[SERVER_SECRET_KEY]) set[SERVER_SECRET_KEY] = random(32).toString('base64url');
    if (hash !== undefined && !current[ADMIN_PASSWORD_KEY]) {
      set[ADMIN_PASSWORD_KEY] = hash;
      set[ADMIN_PASSWORD_MTIME_KEY] = passwordMtime(options.now ?? (() => new Date()));
    }
    added = Object.keys(set).map((key) => `${SETTINGS_SECRET}/${key}`);
    return { set };
  }));
  if (added.length > 0) log.info({ namespace: store.namespace, keys: added }, `added generated keys to Secret ${SETTINGS_SECRET}`);
  return { addedKeys: added, createdInitialAdminSecret: initial?.created ?? false };
}

/** Conflicts in a row before giving up: each one means another replica just wrote. */
const MAX_ATTEMPTS = 8;

/**
 * The initial admin password: the one svc-initial-admin-secret holds if another replica (or an
 * earlier start) wrote it, else `password`, written there. deploy/ ships the Secret empty, so
 * that svc's Role needs no `create` on secrets (which RBAC cannot limit by name): svc fills it
 * with an `update` carrying the resourceVersion it read. A missing Secret is created where the
 * credentials allow it (an administrator's kubeconfig). Either write loses a race with a 409,
 * and the loser reads again and takes the winner's password.
 */
async function initialPassword(client: KubeClient, password: string, log: Logger): Promise<{ password: string; created: boolean }> {
  const encoded = Buffer.from(password).toString('base64');
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const existing = await readInitialAdminSecret(client);
      const data = (existing?.['data'] ?? {}) as Record<string, unknown>;
      const stored = data[INITIAL_PASSWORD_KEY];
      if (typeof stored === 'string' && stored !== '') return { password: Buffer.from(stored, 'base64').toString('utf8'), created: false };
      try {
        if (existing === undefined) await client.request('create', 'secrets', undefined, newInitialAdminSecret(encoded));
        else await client.request('update', 'secrets', INITIAL_ADMIN_SECRET, { ...existing, data: { ...data, [INITIAL_PASSWORD_KEY]: encoded } });
      } catch (err: unknown) {
        if (err instanceof KubeApiError && err.code === 409) continue;
        throw err;
      }
      log.info({ namespace: client.namespace }, `initial admin password written to Secret ${INITIAL_ADMIN_SECRET} (key ${INITIAL_PASSWORD_KEY})`);
      return { password, created: true };
    }
  } catch (err: unknown) {
    throw asApiWriteFailure(INITIAL_ADMIN_SECRET, err);
  }
  throw new SecretApiWriteFailed(`Secret ${INITIAL_ADMIN_SECRET} was changed by other writers ${MAX_ATTEMPTS} times in a row while svc wrote it; not written, try again`);
}

async function readInitialAdminSecret(client: KubeClient): Promise<KubeObject | undefined> {
  try {
    return await client.request('get', 'secrets', INITIAL_ADMIN_SECRET);
  } catch (err: unknown) {
    if (err instanceof KubeApiError && err.code === 404) return undefined;
    throw err;
  }
}

function newInitialAdminSecret(encodedPassword: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: { name: INITIAL_ADMIN_SECRET, labels: { [PART_OF_LABEL]: PART_OF_VALUE } },
    data: { [INITIAL_PASSWORD_KEY]: encodedPassword },
  };
}
