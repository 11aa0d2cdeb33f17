/**
 * What the soak samples while it runs and checks after: each process's RSS over time (and its
 * slope: a leak shows as one), its JS heap as its /metrics reports it (so that a growing RSS can
 * be told apart as live objects or memory around them), its open file descriptors and sockets,
 * and the Redis keys that never expire.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { RedisSentinelPeer } from '../../test/helpers/redis-topology.js';
import { ask } from '../../test/helpers/redis-topology.js';

export interface RssSample {
  readonly at: number;
  readonly process: string;
  readonly mb: number;
}

export function rssMb(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** The JS heap of a process, in MB, as prom-client's default metrics on its /metrics say. */
export interface Heap {
  readonly used: number;
  readonly total: number;
  readonly external: number;
}

const HEAP_METRICS = { used: 'nodejs_heap_size_used_bytes', total: 'nodejs_heap_size_total_bytes', external: 'nodejs_external_memory_bytes' } as const;

export async function heapMb(url: string): Promise<Heap | undefined> {
  try {
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
    const text = await res.text();
    const value = (name: string): number | undefined => {
      const match = new RegExp(`^${name} ([0-9.e+]+)$`, 'm').exec(text)?.[1];
      return match === undefined ? undefined : Number(match) / (1 << 20);
    };
    const [used, total, external] = [value(HEAP_METRICS.used), value(HEAP_METRICS.total), value(HEAP_METRICS.external)];
    return used === undefined || total === undefined || external === undefined ? undefined : { used, total, external };
  } catch {
    return undefined;
  }
}

export interface Descriptors {
  readonly fds: number;
  readonly sockets: number;
}

export function descriptors(pid: number): Descriptors | undefined {
  try {
    const entries = readdirSync(`/proc/${pid}/fd`);
    let sockets = 0;
    for (const fd of entries) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
      } catch {
        // closed while we looked
      }
    }
    return { fds: entries.length, sockets };
  } catch {
    return undefined;
  }
}

/** Least-squares slope of `samples` in MB per hour. */
export function slopeMbPerHour(samples: readonly RssSample[]): number {
  if (samples.length < 2) return 0;
  const t0 = samples[0]!.at;
  const xs = samples.map((s) => (s.at - t0) / 3_600_000);
  const ys = samples.map((s) => s.mb);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** The keys on the primary that have no expiry, by name (SCAN, then one TTL each). */
export async function persistentKeys(redis: RedisSentinelPeer): Promise<Set<string>> {
  const port = await redis.primaryPort();
  return ask(port, undefined, async (r) => {
    const keys = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await r.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) if ((await r.ttl(key)) === -1) keys.add(key);
    } while (cursor !== '0');
    return keys;
  });
}
