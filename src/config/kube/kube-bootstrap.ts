/**
 * First start in a cluster: svc-secret gets the generated keys it lacks (server.secretkey, the
 * admin password's hash), and the clear admin password goes to svc-initial-admin-secret.
 *
 * Replicas may start together, so no step assumes it is alone. The initial admin secret is
 * created with POST, which only one replica can win (409 AlreadyExists for the others); every
 * replica then hashes the password that is in it, the winner's, so whichever hash lands in
 * svc-secret matches the one password an operator can read. The hash is added only where still
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
import { asApiWriteFailure } from './secret-api-writer.js';

export interface KubeBootstrapOptions {
  readonly store: KubeStore;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly randomBytes?: (size: number) => Buffer;
  readonly now?: () => Date;
}

export interface KubeBootstrapResult {
  readonly addedKeys: readonly string[];
  /** True when this process created svc-initial-admin-secret. */
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

/** Creates svc-initial-admin-secret with `password`, or, when another replica (or an earlier start) made it, reads its password. */
async function initialPassword(client: KubeClient, password: string, log: Logger): Promise<{ password: string; created: boolean }> {
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: { name: INITIAL_ADMIN_SECRET, labels: { [PART_OF_LABEL]: PART_OF_VALUE } },
    data: { [INITIAL_PASSWORD_KEY]: Buffer.from(password).toString('base64') },
  };
  try {
    await client.request('create', 'secrets', undefined, body);
    log.info({ namespace: client.namespace }, `initial admin password written to Secret ${INITIAL_ADMIN_SECRET} (key ${INITIAL_PASSWORD_KEY})`);
    return { password, created: true };
  } catch (err: unknown) {
    if (!(err instanceof KubeApiError && err.code === 409)) throw asApiWriteFailure(INITIAL_ADMIN_SECRET, err);
  }
  const existing = await client.request('get', 'secrets', INITIAL_ADMIN_SECRET).catch((err: unknown) => {
    throw asApiWriteFailure(INITIAL_ADMIN_SECRET, err);
  });
  const stored = (existing['data'] as Record<string, unknown> | undefined)?.[INITIAL_PASSWORD_KEY];
  if (typeof stored !== 'string' || stored === '') {
    throw new Error(`Secret ${INITIAL_ADMIN_SECRET} exists without a "${INITIAL_PASSWORD_KEY}" key; delete it to have a new initial password made`);
  }
  return { password: Buffer.from(stored, 'base64').toString('utf8'), created: false };
}
