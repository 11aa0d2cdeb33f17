/** Following an error's `cause` chain to what really failed (a socket's code, a certificate's). */

/** Deep enough for fetch → undici → socket; bounded, so a cycle of causes ends. */
const MAX_DEPTH = 5;

/**
 * The innermost Error down `err`'s chain of Error causes (`err` itself when it has none). A cause
 * that is no Error is not followed: openid-client puts a response body or a failing claim there.
 */
export function innermostCause(err: unknown): unknown {
  let cause: unknown = err;
  for (let i = 0; i < MAX_DEPTH && cause instanceof Error && cause.cause instanceof Error; i++) cause = cause.cause;
  return cause;
}
