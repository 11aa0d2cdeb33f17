/**
 * `svc-server account set-password|disable|enable|reset-second-factor|create NAME`, on a config
 * dir (`--config DIR`) or the cluster's store (`--kube`): the break-glass administration of
 * accounts/offline-admin.ts, for when no login works. Prints what changed on stdout, and exits 1
 * with one line naming what was wrong when it refuses or fails.
 *
 * A new password never comes from an argument (`ps` and shell history would show it): from
 * `--password-file`, else standard input (a hidden prompt, asked twice, on a terminal).
 */
import { stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { NO_AUDIT, type AuditTrail } from '../audit/trail.js';
import { createOfflineAccountAdmin, type ChangeReport, type OfflineAccountAdmin } from '../accounts/offline-admin.js';
import type { ClusterStoreOptions } from '../config/kube/open.js';
import { openOfflineStore } from './offline-store.js';
import { SETTINGS_CM, SETTINGS_SECRET, type StoreSnapshot } from '../config/manifests.js';
import { readRegularFile } from '../lib/regular-file.js';
import { notADirectory } from './load-config.js';
import { MAX_PASSWORD_INPUT_BYTES, readNewPassword, type PasswordInput } from './password-input.js';

export type AccountCommand =
  | { readonly command: 'set-password'; readonly name: string; readonly passwordFile?: string | undefined }
  | { readonly command: 'disable' | 'enable' | 'reset-second-factor'; readonly name: string }
  | { readonly command: 'create'; readonly name: string; readonly capabilities: string };

export interface AccountCommandIo {
  readonly out: Writable;
  readonly err: Writable;
  /** Where set-password reads the password without --password-file. */
  readonly stdin?: PasswordInput;
  readonly audit?: AuditTrail;
  readonly now?: () => number;
}

/** `source`: a config dir, or the cluster's store (`--kube`). Exit 0 when done (or nothing to do), 1 otherwise. */
export async function runAccountCommand(source: string | ClusterStoreOptions, command: AccountCommand, io: AccountCommandIo): Promise<number> {
  const fail = (message: string): number => {
    io.err.write(`svc-server account ${command.command}: ${message}\n`);
    return 1;
  };
  let password: string | undefined;
  try {
    if (command.command === 'set-password') password = await passwordFor(command.passwordFile, io);
  } catch (e: unknown) {
    return fail(e instanceof Error ? e.message : String(e));
  }
  if (typeof source === 'string') {
    const notDir = notADirectory(source);
    if (notDir !== undefined) return fail(notDir);
  }
  let store;
  try {
    store = await openOfflineStore(source);
  } catch (e: unknown) {
    return fail(e instanceof Error ? e.message : String(e));
  }
  try {
    const foreign = typeof source === 'string' ? await foreignOwnedFile(store.current()) : undefined;
    if (foreign !== undefined) return fail(foreign);
    const admin = createOfflineAccountAdmin({ store, audit: io.audit ?? NO_AUDIT, storeKind: typeof source === 'string' ? 'directory' : 'kubernetes', location: 'namespace' in store ? store.namespace : store.dir, now: io.now ?? Date.now });
    const report = await run(admin, command, password);
    for (const line of report) io.out.write(`${line}\n`);
    return 0;
  } catch (e: unknown) {
    return fail(e instanceof Error ? e.message : String(e));
  } finally {
    await store.close();
  }
}

function run(admin: OfflineAccountAdmin, command: AccountCommand, password: string | undefined): Promise<ChangeReport> {
  switch (command.command) {
    case 'set-password':
      return admin.setPassword(command.name, password ?? '');
    case 'disable':
      return admin.disable(command.name);
    case 'enable':
      return admin.enable(command.name);
    case 'reset-second-factor':
      return admin.resetSecondFactor(command.name);
    case 'create':
      return admin.create(command.name, command.capabilities);
  }
}

/**
 * Why a write would take the store away from the server, or undefined. A write replaces the file
 * (atomic rename), so the new file belongs to whoever runs the command: run as root beside a
 * server that runs as another user, it would leave svc-secret (mode 0600) unreadable to the
 * server, which would then keep serving the old version.
 */
async function foreignOwnedFile(snapshot: StoreSnapshot): Promise<string | undefined> {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const files = [snapshot.configMaps.get(SETTINGS_CM)?.file, snapshot.secrets.get(SETTINGS_SECRET)?.file];
  for (const file of new Set(files.filter((f): f is string => f !== undefined))) {
    const owner = (await stat(file)).uid;
    if (owner !== uid) return `${file} belongs to uid ${owner} and this command runs as uid ${uid}: the write would leave it owned by uid ${uid}, which the server may not read; run the command as uid ${owner}`;
  }
  return undefined;
}

async function passwordFor(file: string | undefined, io: AccountCommandIo): Promise<string> {
  if (file !== undefined) return readNewPassword({ text: await readRegularFile(file, MAX_PASSWORD_INPUT_BYTES), from: `--password-file ${file}` });
  if (io.stdin === undefined) throw new Error('give the new password on standard input or with --password-file');
  return readNewPassword({ input: io.stdin, prompt: io.err });
}
