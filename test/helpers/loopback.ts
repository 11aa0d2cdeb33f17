/** Listening on a free loopback port: the start every test server made with node:net or node:http shares. */
import type { Server } from 'node:net';

/** Listens on 127.0.0.1 on a port the system picks; resolves to that port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return address.port;
}
