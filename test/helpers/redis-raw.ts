/**
 * A real redis-server (peers.ts startRedis) with a raw client beside svc's, for the tests that
 * check what svc wrote there: every key under a pattern with its value, a hash's fields and
 * values joined as JSON, another type named. One stop for both.
 */
import { Redis } from 'ioredis';
import { startRedis, type RedisPeer } from './peers.js';

export interface InspectedRedis {
  readonly peer: RedisPeer;
  readonly url: string;
  /** Every key matching `pattern` (a Redis glob) with its value. */
  rawEntries(pattern?: string): Promise<(readonly [string, string])[]>;
  stop(): Promise<void>;
}

export async function startInspectedRedis(): Promise<InspectedRedis> {
  const peer = await startRedis();
  const raw = new Redis(peer.url, { maxRetriesPerRequest: 1 });
  return {
    peer,
    url: peer.url,
    async rawEntries(pattern = '*') {
      const keys = await raw.keys(pattern);
      return Promise.all(keys.map(async (key) => {
        const type = await raw.type(key);
        const value = type === 'hash' ? JSON.stringify(await raw.hgetall(key)) : type === 'string' ? await raw.get(key) : `(${type})`;
        return [key, value ?? ''] as const;
      }));
    },
    async stop() {
      raw.disconnect();
      await peer.stop();
    },
  };
}
