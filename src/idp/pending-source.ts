/**
 * The pending-login bound as the provider and the login app use it: the bound itself
 * (./storage/pending-bound.ts) and the rule that says which source a request counts as
 * (../http/client-address.ts), given once by the composition root so that both count alike.
 */
import type { IncomingMessage } from 'node:http';
import { clientAddressOf, parseTrustedProxies, sourceOf, type TrustedProxies } from '../http/client-address.js';
import type { StateBackend } from '../state/state.js';
import { DEFAULT_PENDING_BYTES, DEFAULT_PENDING_BYTES_PER_SOURCE } from './request-bounds.js';
import { createPendingBound, type PendingBound } from './storage/pending-bound.js';

export interface PendingDeps {
  readonly bound: PendingBound;
  readonly trustedProxies: TrustedProxies;
}

/** The deps given, or the default bound with no trusted proxy (unit tests, tools). */
export function pendingOf(deps: { readonly state: StateBackend; readonly log: PendingLog; readonly pending?: PendingDeps }, now: () => number): PendingDeps {
  return deps.pending ?? {
    bound: createPendingBound({ state: deps.state, limits: { totalBytes: DEFAULT_PENDING_BYTES, perSourceBytes: DEFAULT_PENDING_BYTES_PER_SOURCE }, now, log: deps.log }),
    trustedProxies: parseTrustedProxies(undefined),
  };
}

type PendingLog = { warn(obj: object, msg: string): void };

/** The source a request is charged to; 'unknown' outside a request (one shared share: the safe side). */
export function requestSource(req: IncomingMessage | undefined, trusted: TrustedProxies): string {
  if (req === undefined) return 'unknown';
  return sourceOf(clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted));
}
