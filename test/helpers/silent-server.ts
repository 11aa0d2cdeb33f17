/** A TCP server on loopback that accepts and counts connections and never answers (a blackhole); after close(), a port where nothing listens. */
import { createServer, type Server, type Socket } from 'node:net';
import { listenOnLoopback } from './loopback.js';

export interface SilentServer {
  readonly port: number;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections still open. */
  open(): number;
  close(): Promise<void>;
}

export async function silentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    // Read and drop: a socket nobody reads never sees the peer's FIN, so never closes.
    socket.resume();
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    connections: () => count,
    open: () => sockets.size,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
