/**
 * The one contract every feature of the server fulfils towards the composition root
 * (server.ts): what it adds to the Koa app, what it answers before Koa, and how it stops.
 * Features are built in one order (see server.ts) from the Services and what earlier stages
 * made; none reaches for another's internals.
 */
import type Router from '@koa/router';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BeforeDispatch } from '../http/entry.js';
import type { RequestTarget } from '../http/request-target.js';
import type { AppState } from '../http/state.js';
import type { WebSocketRoute } from '../http/upgrade.js';

/** Answers a request on the raw server before Koa (true), or leaves it to the app (false). */
export type RawHandler = (req: IncomingMessage, res: ServerResponse, target: RequestTarget) => boolean;

/** Work to finish before a request is dispatched, or undefined when there is none (the usual case). */
export type { BeforeDispatch };

export interface Feature {
  /** For logs and errors at start. */
  readonly name: string;
  readonly routers?: readonly Router<AppState>[];
  /** Runs before any request is dispatched, to the raw handlers or Koa (the SSO renewal, which may replace the cookie's token). */
  readonly beforeDispatch?: BeforeDispatch;
  readonly handle?: RawHandler;
  /** WebSocket handshakes this feature relays (http/upgrade.ts answers every other upgrade). */
  readonly webSocket?: WebSocketRoute;
  /** Stops what the feature opened; called after the server stopped accepting requests. */
  close?(): Promise<void>;
}
