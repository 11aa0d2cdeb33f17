/**
 * The API tokens of an account seen disabled or removed are deleted from svc-secret (issue 52,
 * review finding 1). account-cutoffs.ts refuses them at once, but that record lives in the state
 * backend: memory state loses it at every start, Redis when it loses its data, and API tokens are
 * not refused by the loss cutoff (revocations-epoch.ts: a CI job's token must not die with Redis).
 * Without this, a token refused because its account was disabled would work again after a loss.
 *
 * The same write and audit event as `svc account delete-token` (api-tokens.ts remove,
 * `token-deleted`), with `event.reason` saying why, for every record issued at or before the
 * time the account was seen disabled (the records validity.ts refuses by that time): a token made
 * after the account was enabled again is kept. Every replica that sees the change runs it; the
 * first write removes the records and the others find nothing to remove and write nothing.
 * A failed write is logged and tried again (RETRY_FIRST_MS, doubling to RETRY_MOST_MS) until it
 * is done or the server closes; meanwhile the state record still refuses the tokens.
 *
 * A record list the settings cannot read is deleted whole: the account is disabled, and keeping
 * records nobody can read would keep whatever they hold.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { parseTokens } from '../accounts/config.js';
import { tokensKey } from '../accounts/api-tokens.js';
import type { AuditTrail } from '../audit/trail.js';
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import { ProblemSink } from '../config/problems.js';
import type { ConfigStore, SecretPatch } from '../config/store.js';

export const RETRY_FIRST_MS = 1_000;
export const RETRY_MOST_MS = 60_000;

/** Why the account's tokens went. */
export type AccountEnd = 'disabled' | 'removed';

export function deletionReason(how: AccountEnd): string {
  return how === 'disabled' ? 'account-disabled: the account was disabled' : 'account-removed: the account was removed from svc-cm';
}

export interface DisabledAccountTokensDeps {
  readonly store: Pick<ConfigStore, 'updateSecret' | 'current'>;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  /** Tests shorten it. */
  readonly retryFirstMs?: number;
}

export interface DisabledAccountTokens {
  /**
   * Deletes the records of `name`'s API tokens issued at or before `atMs` (ms); resolves once
   * that is done, retrying a failed write until then (or until close).
   */
  deleteTokensOf(name: string, how: AccountEnd, atMs: number): Promise<void>;
  close(): void;
}

interface Removed {
  readonly ids: readonly string[];
  /** The list could not be read: deleted whole. */
  readonly unreadable: boolean;
}

/** The patch that drops the records of `name` issued at or before `atMs`, and what it drops. */
export function dropRecordsBefore(current: Readonly<Record<string, string>>, name: string, atMs: number): { readonly patch: SecretPatch; readonly removed: Removed } {
  const key = tokensKey(name);
  const text = current[key];
  if (text === undefined) return { patch: {}, removed: { ids: [], unreadable: false } };
  const list = parseTokens(text, new ProblemSink().scoped(SETTINGS_SECRET), key);
  if (list === undefined) return { patch: { delete: [key] }, removed: { ids: [], unreadable: true } };
  // validity.ts refuses a token whose iat * 1000 is not after the time the account was seen disabled.
  const gone = list.filter((t) => t.iat * 1000 <= atMs);
  if (gone.length === 0) return { patch: {}, removed: { ids: [], unreadable: false } };
  const rest = list.filter((t) => t.iat * 1000 > atMs);
  const patch: SecretPatch = rest.length > 0 ? { set: { [key]: JSON.stringify(rest) } } : { delete: [key] };
  return { patch, removed: { ids: gone.map((t) => t.id), unreadable: false } };
}

export function createDisabledAccountTokens(deps: DisabledAccountTokensDeps): DisabledAccountTokens {
  const { store, audit, log } = deps;
  const first = deps.retryFirstMs ?? RETRY_FIRST_MS;
  const stop = new AbortController();

  async function once(name: string, atMs: number): Promise<Removed> {
    let removed: Removed = { ids: [], unreadable: false };
    // No svc-secret at all: no record to delete, and a write would create the Secret.
    if (!store.current().secrets.has(SETTINGS_SECRET)) return removed;
    await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
      const dropped = dropRecordsBefore(current, name, atMs);
      removed = dropped.removed;
      return dropped.patch;
    }));
    return removed;
  }

  function tell(name: string, how: AccountEnd, removed: Removed): void {
    const reason = deletionReason(how);
    for (const id of removed.ids) {
      audit.record({ category: 'iam', type: 'deletion', action: 'token-deleted', outcome: 'success', reason, svc: { account: name, tokenId: id } });
    }
    if (removed.unreadable) {
      audit.record({ category: 'iam', type: 'deletion', action: 'token-deleted', outcome: 'success', reason: `${reason}; its unreadable ${tokensKey(name)} deleted whole`, svc: { account: name } });
    }
    if (removed.ids.length > 0 || removed.unreadable) {
      log.info({ account: name, tokenIds: removed.ids, unreadable: removed.unreadable }, `accounts: the API tokens of account '${name}' were deleted from svc-secret: the account was ${how}`);
    }
  }

  return {
    async deleteTokensOf(name, how, atMs) {
      for (let wait = first; !stop.signal.aborted; wait = Math.min(wait * 2, RETRY_MOST_MS)) {
        try {
          tell(name, how, await once(name, atMs));
          return;
        } catch (err: unknown) {
          log.warn({ err, account: name, retryInMs: wait }, `accounts: the API tokens of account '${name}' (${how}) could not be deleted from svc-secret; tried again in ${String(wait)} ms, and refused meanwhile by the record in the state backend, which a loss of state would take with it`);
        }
        await sleep(wait, undefined, { signal: stop.signal, ref: false }).catch(() => undefined);
      }
    },
    close() {
      stop.abort();
    },
  };
}
