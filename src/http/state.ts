/** What middleware leaves on `ctx.state` for later middleware and routes. Typed once, never cast. */
import type { Logger } from 'pino';
import type { SvcError } from '../errors.js';
import type { Principal } from '../session/principal.js';

export interface AppState {
  requestId: string;
  log: Logger;
  /** Set by the auth middleware when the request carried a valid token. */
  principal?: Principal;
  /** The raw token the principal came from, for logout. */
  token?: string;
  /** Why a token that was sent is not accepted; routes that need a principal answer with it. */
  authError?: SvcError;
}
