/**
 * Mocha root hook plugin (.mocharc.json `require`): no test reaches beyond this machine by
 * mistake. Every TCP connection this process opens (net, tls, http, undici's fetch all go
 * through net.Socket#connect) must go to a loopback address or `localhost`; any other host is
 * refused with an error that names it, before a DNS query or a packet leaves. Unix sockets pass.
 * Child processes (servers a test spawns) are not covered: they are pointed at loopback peers.
 */
import net from 'node:net';

const LOOPBACK_NAMES = new Set(['localhost', 'ip6-localhost']);

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (LOOPBACK_NAMES.has(bare) || bare.endsWith('.localhost')) return true;
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  if (net.isIPv6(bare)) return bare === '::1' || /^::ffff:127\./.test(bare);
  return false;
}

/** The host a connect() call names: (options), (port, host?), (path) for Unix sockets. */
function hostOf(args: unknown[]): string | undefined {
  const [first, second] = args;
  if (Array.isArray(first)) return hostOf(first as unknown[]); // the normalized form net uses internally
  if (typeof first === 'object' && first !== null) {
    const options = first as { host?: unknown; path?: unknown };
    if (typeof options.path === 'string') return undefined;
    return typeof options.host === 'string' ? options.host : 'localhost';
  }
  if (typeof first === 'string' && !/^\d+$/.test(first)) return undefined; // a pipe path
  return typeof second === 'string' ? second : 'localhost';
}

const original = net.Socket.prototype.connect;
// The overloads of connect() cannot be restated one by one; the replacement forwards whatever it got.
net.Socket.prototype.connect = function connectLoopbackOnly(this: net.Socket, ...args: unknown[]) {
  const host = hostOf(args);
  if (host !== undefined && !isLoopbackHost(host)) {
    const error = Object.assign(new Error(`test harness: outbound connection to '${host}' refused; tests talk to loopback only`), { code: 'ECONNREFUSED' });
    process.nextTick(() => this.destroy(error));
    return this;
  }
  return (original as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

export const mochaHooks = {};
