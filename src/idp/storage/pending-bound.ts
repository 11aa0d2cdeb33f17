/**
 * Bounds what anonymous requests make svc keep (interactions of authorization requests, device
 * codes, connector transactions) by bytes, per source address and in all, in one byte budget of
 * the state backend (StateBackend.charge): shared by replicas on Redis, one round trip per new
 * record. A record's bytes are charged to the address that made it before it is written, and
 * given back the moment it is used up or removed (a finished or abandoned login), or at its
 * expiry at the latest. So a source that floods fills only its own share; many sources together
 * are held to the total, in bytes, which is what memory is; and logins that finish never add up,
 * however many there are: no count caps legitimate load.
 *
 * A record saved again (an interaction after each login step) keeps its charge, following its
 * size and lifetime, and is not bounded again: it was admitted.
 */
import type { Counter } from 'prom-client';
import type { StateBackend } from '../../state/state.js';

/** The state backend's budget that every anonymous record is charged to. */
export const ANONYMOUS_BUDGET = 'idp:anonymous';

/**
 * Added to a record's own bytes for what keeping it costs besides its text: its key, an index
 * key, the budget's own entry (member, source, expiry), the backend's per-key overhead and
 * allocator rounding. Measured: Redis grew by 5.6 KB per interaction of the largest request
 * taken, whose text is 4.6 KB (test/e2e/idp-bounds.test.ts).
 */
export const RECORD_OVERHEAD_BYTES = 1024;

/** The kinds of anonymous records, for the log line and the metric. */
export type PendingKind = 'Interaction' | 'DeviceCode' | 'ConnectorTransaction';

export interface PendingLimits {
  readonly perSourceBytes: number;
  readonly totalBytes: number;
}

export interface PendingRecord {
  readonly kind: PendingKind;
  /** The record's key in the state backend (no bearer value in it). */
  readonly key: string;
  /** The source the bound is keyed on (http/client-address.ts sourceOf). */
  readonly source: string;
  /** The record's stored size; RECORD_OVERHEAD_BYTES is added. */
  readonly bytes: number;
  readonly ttlMs: number;
}

export interface PendingBound {
  /** Charges a record to its source; false (nothing charged, say so to the caller) past a bound. */
  admit(record: PendingRecord): Promise<boolean>;
  /** Gives a record's charge back (it was used up or removed); a record never charged: nothing. */
  release(key: string): Promise<void>;
}

export interface PendingBoundDeps {
  readonly state: StateBackend;
  readonly limits: PendingLimits;
  readonly now: () => number;
  readonly log: { warn(obj: object, msg: string): void };
  /** Labels `kind` and `bound` ('source' | 'total'); never the source (any number of them). */
  readonly refusals?: Counter<'kind' | 'bound'>;
}

/** One refusal line per source per this long: a flood is one line a minute, not one per request. */
export const REFUSAL_LOG_EVERY_MS = 60_000;
/** Sources remembered for that; past it the memory is dropped (a few more lines, never more memory). */
const MAX_LOGGED_SOURCES = 1_000;

export function createPendingBound(deps: PendingBoundDeps): PendingBound {
  const { state, limits, now, log } = deps;
  const loggedAt = new Map<string, number>();

  function refused(record: PendingRecord, bound: 'source' | 'total', heldBytes: number, at: number): void {
    deps.refusals?.inc({ kind: record.kind, bound });
    const last = loggedAt.get(record.source);
    if (last !== undefined && at - last < REFUSAL_LOG_EVERY_MS) return;
    if (loggedAt.size >= MAX_LOGGED_SOURCES) loggedAt.clear();
    loggedAt.set(record.source, at);
    const limit = bound === 'source' ? limits.perSourceBytes : limits.totalBytes;
    log.warn(
      { source: record.source, bound, heldBytes, limitBytes: limit, kind: record.kind },
      bound === 'source'
        ? `identity provider: ${record.source} holds ${heldBytes} bytes of pending logins, its bound is ${limit} (SVC_IDP_PENDING_BYTES_PER_SOURCE); its new logins are refused until some finish or expire, other sources are not affected`
        : `identity provider: pending logins of all sources hold ${heldBytes} bytes, the bound is ${limit} (SVC_IDP_PENDING_BYTES); new logins from ${record.source} are refused until some finish or expire`,
    );
  }

  return {
    async admit(record) {
      const at = now();
      const answer = await state.charge(ANONYMOUS_BUDGET, {
        member: record.key, source: record.source, bytes: record.bytes + RECORD_OVERHEAD_BYTES, untilMs: at + record.ttlMs,
      }, limits, at);
      if (answer.admitted) return true;
      refused(record, answer.bound, answer.heldBytes, at);
      return false;
    },
    release: (key) => state.release(ANONYMOUS_BUDGET, key),
  };
}
