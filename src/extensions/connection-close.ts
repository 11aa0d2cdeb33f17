/**
 * One 'close' listener per client connection, shared by every response queued on it.
 *
 * A pipelined response waiting behind another has no socket yet, so the relay watches the
 * connection itself for the client leaving (forward.ts). One listener per queued response went
 * past Node's limit of ten listeners past ten pipelined requests and printed a
 * MaxListenersExceededWarning; raising the limit would only hide a count that grows with what a
 * client sends. Here the connection carries one listener, and the waiting relays sit in a set
 * that empties as they settle.
 */
import type { Socket } from 'node:net';

const waiting = new WeakMap<Socket, Set<() => void>>();

/** Calls `listener` once when `socket` closes, unless the returned function was called first. */
export function onConnectionClose(socket: Socket, listener: () => void): () => void {
  let listeners = waiting.get(socket);
  if (listeners === undefined) {
    const fresh = new Set<() => void>();
    waiting.set(socket, fresh);
    socket.once('close', () => {
      waiting.delete(socket);
      for (const each of fresh) each();
      fresh.clear();
    });
    listeners = fresh;
  }
  const own = listeners;
  own.add(listener);
  return () => void own.delete(listener);
}
