/** What middleware leaves on `ctx.state` for later middleware and routes. Typed once, never cast. */
import type { Logger } from 'pino';
import type { SvcError } from '../errors.js';
import type { Principal } from '../principal.js';

export interface AppState {
  requestId: string;
  log: Logger;
  /** Set by the auth middleware when the request carried a valid token. */
  principal?: Principal;
  /** The raw token the principal came from, for logout. */
  token?: string;
  /** Whether that token came in the svc.token cookie (not a bearer header). */
  tokenFromCookie?: boolean;
  /** Why a token that was sent is not accepted; routes that need a principal answer with it. */
  authError?: SvcError;
}

/**
 * ctx.state as the request-context middleware makes it: the child logger carrying the request id
 * is made on first use (most requests never log, and a pino child per request was a measurable
 * share of the CPU). A class with the lazy getter on its prototype, not a per-request
 * Object.defineProperty: a per-object accessor puts every request's state on V8's slow path.
 */
export class RequestState implements AppState {
  principal?: Principal;
  token?: string;
  tokenFromCookie?: boolean;
  authError?: SvcError;
  #log: Logger | undefined;

  constructor(
    public requestId: string,
    private readonly parentLog: Logger,
  ) {}

  get log(): Logger {
    return (this.#log ??= this.parentLog.child({ requestId: this.requestId }));
  }

  set log(value: Logger) {
    this.#log = value;
  }
}
