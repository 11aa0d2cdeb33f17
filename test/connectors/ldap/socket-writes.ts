/** Counting what goes out on the LDAP connector's sockets, for tests of how requests are written. */
import { Socket } from 'node:net';

/**
 * Counts the writes made on sockets to `port` (net.Socket's _write for one chunk, _writev for
 * several at once), each as the number of chunks it carried; restore() puts the originals back.
 */
export function writesTo(port: number): { requestsPerWrite: number[]; restore(): void } {
  const requestsPerWrite: number[] = [];
  type Writes = { _write: (...args: unknown[]) => unknown; _writev: (chunks: unknown[], cb: unknown) => unknown };
  const proto = Socket.prototype as unknown as Writes;
  const { _write: write, _writev: writev } = proto;
  proto._write = function (this: Socket, ...args: unknown[]) {
    if (this.remotePort === port) requestsPerWrite.push(1);
    return write.apply(this, args);
  };
  proto._writev = function (this: Socket, chunks: unknown[], cb: unknown) {
    if (this.remotePort === port) requestsPerWrite.push(chunks.length);
    return writev.call(this, chunks, cb);
  };
  return {
    requestsPerWrite,
    restore() {
      proto._write = write;
      proto._writev = writev;
    },
  };
}
