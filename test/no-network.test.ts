/** The harness's network guard (no-network.ts): loopback passes, anything else is refused by name. */
import { expect } from 'chai';
import { createServer } from 'node:net';
import { isLoopbackHost } from './no-network.js';

describe('test harness: no outbound network', () => {
  it('tells loopback hosts from the rest', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', 'svc.localhost', '::ffff:127.0.0.1']) expect(isLoopbackHost(host), host).to.equal(true);
    for (const host of ['10.0.0.1', '192.168.1.1', '8.8.8.8', 'example.com', '::2', 'localhost.example.com', '2001:db8::1']) expect(isLoopbackHost(host), host).to.equal(false);
  });

  it('refuses fetch to a public host before any packet leaves, naming it', async () => {
    const err = await fetch('http://example.com/').then(
      () => undefined,
      (e: unknown) => e as Error & { cause?: Error },
    );
    expect(err?.cause?.message).to.contain("outbound connection to 'example.com' refused");
  });

  it('lets a loopback connection through', async () => {
    const server = createServer((socket) => socket.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const reply = await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    server.close();
    // The server speaks no HTTP: what matters is that the connection was made, not refused by the guard.
    expect(String((reply as { cause?: unknown }).cause ?? reply)).not.to.contain('refused; tests talk to loopback only');
  });
});
