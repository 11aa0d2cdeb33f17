/**
 * Marks the requests in which the provider only re-keys a browser's session: at the end of
 * every login step (its resume) oidc-provider stores the session under a new id and removes the
 * old one, against session fixation. The old id was only ever sent to that same browser, which
 * now holds the new one for the same login, so that removal coming back with a failover grants
 * nothing more: the adapter need not wait for a replica there (./adapter.ts). A logout's removal,
 * outside such a request, still waits.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const rekeying = new AsyncLocalStorage<true>();

/** Runs a login step's resume: Session removals inside it are re-keys. */
export function asSessionRekey<T>(run: () => Promise<T>): Promise<T> {
  return rekeying.run(true, run);
}

export function isSessionRekey(): boolean {
  return rekeying.getStore() === true;
}
