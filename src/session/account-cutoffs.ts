/**
 * When each account was last seen disabled, so that re-enabling an account does not revive the
 * tokens issued before it was disabled (validity.ts refuses a token whose `iat` is not after it).
 *
 * Why a record: `accounts.<name>.enabled` is a switch in svc-cm with no history, and tokens are
 * stateless, so without one a session stolen before the disable works again the moment the
 * account is switched back on. svc never writes svc-cm, and svc-secret is the operator's file
 * too; the state backend is where the revocation list lives already, with the same reach: with
 * Redis every replica and restart sees the record, with memory state one process (which runs
 * alone, docs/decisions.md).
 *
 * Recorded by every replica that sees the account disabled: at start, and on each change that
 * disables or removes it. At start the record moves to the present even if one exists: the account may have
 * been enabled and disabled again while no replica ran. A disable that no replica ever saw (svc
 * stopped throughout) leaves no record; that limit is documented.
 *
 * Storage: the hash DISABLED_AT_HASH (name -> ms), loaded at start, on every (re)subscribe
 * and every RELOAD_INTERVAL_MS; each record is also published, so other replicas apply it at once.
 * Records only move forward in time. The check reads this replica's copy, synchronously. The
 * write waits for a Redis replica (`replicated`), as a revocation does, and the hash shares the
 * revocation list's Cluster slot (hash tag {svc:revoked-tokens}), so a node's loss takes both,
 * and the loss cutoff (revocations-epoch.ts) then covers the session tokens it held.
 *
 * What a loss of state still takes: the record itself. Session tokens of before it are refused
 * by the loss cutoff; API tokens are not (revocations-epoch.ts), so each record also has the
 * account's API token records deleted from svc-secret (`onRecorded`, disabled-account-tokens.ts):
 * durable, as `svc account delete-token`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AccountSettings } from '../accounts/config.js';
import { markKeyFor, StateUnavailable, type StateBackend } from '../state/state.js';
import type { AccountEnd } from './disabled-account-tokens.js';
import { RELOAD_INTERVAL_MS, RETRY_MS, REVOKED_HASH } from './revocation.js';

/** In the revocation list's Cluster slot: `account-disabled-at{svc:revoked-tokens}`. */
export const DISABLED_AT_HASH = markKeyFor(REVOKED_HASH, 'account-disabled-at');
/** Its name before issue 52's review, in a slot of its own: still read, so an upgrade keeps its records. */
export const FORMER_DISABLED_AT_HASH = 'account-disabled-at';
export const DISABLED_AT_CHANNEL = 'account-disabled-at';

export interface AccountCutoffs {
  /** Milliseconds since the epoch when the account was last seen disabled; undefined: never. */
  disabledAt(name: string): number | undefined;
  /**
   * Records the accounts disabled in `next` that were not before (all of them at start, when
   * `previous` is undefined), and those removed since `previous`.
   */
  observe(next: ReadonlyMap<string, AccountSettings>, previous: ReadonlyMap<string, AccountSettings> | undefined): Promise<void>;
  close(): Promise<void>;
}

/**
 * Records what the accounts in force say now, then on every settings change; the result stops
 * following. Recording is synchronous up to the state write, so a listener registered later (the
 * proxy's re-check of open WebSockets) already sees the new cutoff.
 */
export async function followAccounts(
  cutoffs: AccountCutoffs,
  settings: { current(): { readonly accounts: ReadonlyMap<string, AccountSettings> }; onChange(listener: (next: { readonly accounts: ReadonlyMap<string, AccountSettings> }, previous: { readonly accounts: ReadonlyMap<string, AccountSettings> }) => void): () => void },
): Promise<() => void> {
  await cutoffs.observe(settings.current().accounts, undefined);
  return settings.onChange((next, previous) => {
    if (next.accounts !== previous.accounts) void cutoffs.observe(next.accounts, previous.accounts);
  });
}

export interface AccountCutoffsDeps {
  readonly state: StateBackend;
  readonly log: Pick<Logger, 'warn'>;
  readonly now: () => number;
  /** Told of each account this replica records as disabled or removed, with the record's time (ms). */
  readonly onRecorded?: (name: string, how: AccountEnd, atMs: number) => void;
}

export async function createAccountCutoffs({ state, log, now, onRecorded }: AccountCutoffsDeps): Promise<AccountCutoffs> {
  const local = new Map<string, number>();
  let closed = false;
  let unsubscribe: (() => Promise<void>) | undefined;

  function apply(name: string, atMs: number): void {
    if (name !== '' && Number.isFinite(atMs) && atMs > (local.get(name) ?? -1)) local.set(name, atMs);
  }

  async function load(): Promise<void> {
    try {
      for (const hash of [DISABLED_AT_HASH, FORMER_DISABLED_AT_HASH]) {
        for (const [name, value] of Object.entries(await state.hashGetAll(hash))) apply(name, Number(value));
      }
    } catch (err: unknown) {
      if (!(err instanceof StateUnavailable)) log.warn({ err }, 'account cutoffs: cannot load them');
    }
  }

  function heard(message: string): void {
    const space = message.lastIndexOf(' ');
    if (space > 0) apply(message.slice(0, space), Number(message.slice(space + 1)));
  }

  async function subscribe(): Promise<void> {
    try {
      const off = await state.subscribe(DISABLED_AT_CHANNEL, heard, { onLive: () => void load(), onLost: () => undefined });
      if (closed) await off();
      else unsubscribe = off;
    } catch {
      // The periodic reload covers what is missed meanwhile.
      if (!closed) void sleep(RETRY_MS, undefined, { ref: false }).then(() => (closed ? undefined : subscribe()));
    }
  }

  /** Locally first, so this replica refuses at once even when the state backend is away. */
  async function record(name: string, how: AccountEnd): Promise<void> {
    const atMs = now();
    apply(name, atMs);
    onRecorded?.(name, how, atMs);
    try {
      await state.hashSet(DISABLED_AT_HASH, name, String(atMs), { replicated: true });
      await state.publish(DISABLED_AT_CHANNEL, `${name} ${atMs}`);
    } catch (err: unknown) {
      log.warn({ err, account: name }, 'account cutoffs: cannot share that the account was disabled; other replicas learn it when they see it');
    }
  }

  await subscribe();
  await load();
  const reload = setInterval(() => void load(), RELOAD_INTERVAL_MS);
  reload.unref();

  return {
    disabledAt: (name) => local.get(name),
    async observe(next, previous) {
      const disabled = [...next].filter(([name, account]) => !account.enabled && (previous === undefined || previous.get(name)?.enabled !== false)).map(([name]) => name);
      // An account removed and added again later must not revive its tokens either.
      const removed = previous === undefined ? [] : [...previous.keys()].filter((name) => !next.has(name));
      await Promise.all([...disabled.map((name) => record(name, 'disabled')), ...removed.map((name) => record(name, 'removed'))]);
    },
    async close() {
      closed = true;
      clearInterval(reload);
      await unsubscribe?.();
    },
  };
}
