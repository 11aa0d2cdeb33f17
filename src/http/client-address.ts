/**
 * The address a request comes from, for bounds kept per source: the connection's peer, or, when
 * that peer is a front proxy the operator named in SVC_TRUSTED_PROXIES, the address it reports
 * in X-Forwarded-For. Nobody else's X-Forwarded-For is read (anyone can send one), and the
 * default trusts no proxy: behind an unnamed proxy every request counts as the proxy's own.
 *
 * The header is read from the right: each hop appends the address it received from, so the
 * rightmost entry is what the nearest proxy saw. Entries are taken while the address so far is
 * a trusted proxy; the first untrusted one is the source. A malformed entry stops the walk at
 * the last address known good (a proxy's), never at a value the client chose.
 *
 * A source is the address itself for IPv4, and its /64 for IPv6: one host holds a whole /64,
 * so per-address bounds on IPv6 would be per-host bounds times 2^64.
 */
import { BlockList, isIP } from 'node:net';

export const TRUSTED_PROXIES_KEY = 'SVC_TRUSTED_PROXIES';

/** Hops of X-Forwarded-For read at most; a longer chain stops at the last trusted one. */
const MAX_HOPS = 16;

export interface TrustedProxies {
  /** Whether `address` (as the socket gives it) is a proxy whose X-Forwarded-For is believed. */
  has(address: string): boolean;
  /** What the setting says, for the start-up log. */
  readonly described: string;
}

/** A value of SVC_TRUSTED_PROXIES that is not a list of addresses and CIDR ranges. */
export class TrustedProxiesInvalid extends Error {
  constructor(value: string, why: string) {
    super(`${TRUSTED_PROXIES_KEY}: '${value}' ${why}; give IP addresses or CIDR ranges separated by commas (e.g. 10.0.0.0/8,fd00::/8), or leave it unset to trust no proxy`);
    this.name = 'TrustedProxiesInvalid';
  }
}

/** Parses the comma-separated list once, at start; every bad entry is named in the error. */
export function parseTrustedProxies(raw: string | undefined): TrustedProxies {
  const list = new BlockList();
  const entries = (raw ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    if (family === 0 || extra !== undefined) throw new TrustedProxiesInvalid(entry, 'is not an IP address or CIDR range');
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) {
      list.addAddress(address, type);
      continue;
    }
    const bits = Number(prefix);
    if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) throw new TrustedProxiesInvalid(entry, `has a prefix length that is not 0-${family === 4 ? 32 : 128}`);
    if (bits === 0) throw new TrustedProxiesInvalid(entry, 'trusts every address, so anyone could choose the address they are counted under');
    list.addSubnet(address, bits, type);
  }
  const has = (address: string): boolean => {
    const plain = unmapped(address);
    const family = isIP(plain);
    return family !== 0 && list.check(plain, family === 4 ? 'ipv4' : 'ipv6');
  };
  return { has: entries.length === 0 ? () => false : has, described: entries.length === 0 ? 'none' : entries.join(', ') };
}

/** The request's source address (see the module header); '' when the socket has none (closed). */
export function clientAddressOf(peer: string | undefined, forwardedFor: string | readonly string[] | undefined, trusted: TrustedProxies): string {
  let address = unmapped(peer ?? '');
  if (forwardedFor === undefined || !trusted.has(address)) return address;
  const hops = (typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',')).split(',');
  for (let i = hops.length - 1, read = 0; i >= 0 && read < MAX_HOPS && trusted.has(address); i--, read++) {
    const hop = unmapped((hops[i] ?? '').trim());
    if (isIP(hop) === 0) break;
    address = hop;
  }
  return address;
}

/** What per-source bounds are keyed on: an IPv4 address, an IPv6 /64, or 'unknown'. */
export function sourceOf(address: string): string {
  const family = isIP(address);
  if (family === 4) return address;
  if (family === 6) return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
  return 'unknown';
}

/** `::ffff:192.0.2.1` (an IPv4 peer on a dual-stack socket) as `192.0.2.1`. */
function unmapped(address: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice(7) : address;
}

/** The eight groups of an IPv6 address, lowercase, without leading zeros. */
function expandIpv6(address: string): string[] {
  const bare = address.split('%')[0] ?? '';
  const [head = '', tail] = bare.split('::');
  const groupsOf = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const left = groupsOf(head);
  const right = tail === undefined ? [] : groupsOf(tail);
  // An embedded IPv4 tail (`::1.2.3.4`) is two groups.
  const last = right.length > 0 ? right : left;
  const v4 = last[last.length - 1];
  if (v4 !== undefined && v4.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
    last.splice(last.length - 1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  const middle = Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...(tail === undefined ? [] : middle), ...right].map((g) => parseInt(g, 16).toString(16));
}
