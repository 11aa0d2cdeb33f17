/**
 * The adapter's answer when the state backend does not answer (Redis down, a command timed
 * out): `temporarily_unavailable`, 503 (../unavailable.ts), instead of the 500 `server_error`
 * oidc-provider gives any other error an adapter throws. Nothing is granted either way; the
 * status tells the client to come back, and tells an operator's 5xx alerts that it is the state
 * backend (its own log lines say which), not a bug in svc.
 */
import type { Adapter, AdapterConstructor, AdapterPayload } from 'oidc-provider';
import { StateUnavailable } from '../../state/state.js';
import { temporarilyUnavailable } from '../unavailable.js';

export const STORAGE_UNAVAILABLE = 'the login service cannot reach its storage right now; try again in a moment';

/** `err` as the provider should see it: a StateUnavailable becomes a 503 temporarily_unavailable. */
export function asProviderError(err: unknown): unknown {
  if (!isStateUnavailable(err)) return err;
  return temporarilyUnavailable(STORAGE_UNAVAILABLE, err);
}

/**
 * By name too: under the test runner the lazily imported provider (main/server.ts) met a
 * StateUnavailable that failed instanceof (the state module evaluated twice), and answered 500.
 */
function isStateUnavailable(err: unknown): boolean {
  return err instanceof StateUnavailable || (err instanceof Error && err.name === 'StateUnavailable');
}

async function mapped<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err: unknown) {
    throw asProviderError(err);
  }
}

/** `Base`, every method of it answering a StateUnavailable as asProviderError says. */
export function answeringUnavailable(Base: AdapterConstructor): AdapterConstructor {
  return class StorageUnavailableAs503 implements Adapter {
    readonly #inner: Adapter;

    constructor(name: string) {
      this.#inner = new Base(name);
    }

    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      return mapped(() => this.#inner.upsert(id, payload, expiresIn) as Promise<void>);
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      return mapped(() => this.#inner.find(id) as Promise<AdapterPayload | undefined>);
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return mapped(() => this.#inner.findByUid(uid) as Promise<AdapterPayload | undefined>);
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return mapped(() => this.#inner.findByUserCode(userCode) as Promise<AdapterPayload | undefined>);
    }

    consume(id: string): Promise<void> {
      return mapped(() => this.#inner.consume(id) as Promise<void>);
    }

    destroy(id: string): Promise<void> {
      return mapped(() => this.#inner.destroy(id) as Promise<void>);
    }

    revokeByGrantId(grantId: string): Promise<void> {
      return mapped(() => this.#inner.revokeByGrantId(grantId) as Promise<void>);
    }
  };
}
