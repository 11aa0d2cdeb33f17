/**
 * The subscriber side of the Redis backend: one extra connection (a Redis connection in
 * subscribe mode can run nothing else), opened on the first subscribe, with any number of
 * handlers per channel. Channels arrive here already prefixed. ioredis resubscribes every
 * channel after a reconnect (autoResubscribe), so handlers survive a Redis restart.
 */
import type { Redis } from 'ioredis';
import type { StateLog } from './state.js';

type Handler = (message: string) => void;

interface Channel {
  readonly handlers: Set<Handler>;
  /** Settles when SUBSCRIBE was acknowledged; concurrent subscribers of a channel share it. */
  readonly active: Promise<void>;
}

export interface SubscriberDeps {
  open(): Redis;
  ready(client: Redis): Promise<void>;
  translate(err: unknown, op: string): Error;
  readonly log: StateLog;
}

export interface Subscriber {
  subscribe(channel: string, handler: Handler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export function createSubscriber(deps: SubscriberDeps): Subscriber {
  const channels = new Map<string, Channel>();
  let client: Redis | undefined;

  function connection(): Redis {
    if (client !== undefined) return client;
    const opened = deps.open();
    opened.on('message', function dispatch(channel: string, message: string) {
      for (const handler of channels.get(channel)?.handlers ?? []) {
        try {
          handler(message);
        } catch (err: unknown) {
          deps.log.warn({ err, channel }, 'state subscriber failed');
        }
      }
    });
    return (client = opened);
  }

  async function activate(sub: Redis, channel: string): Promise<void> {
    try {
      await deps.ready(sub);
      await sub.subscribe(channel);
    } catch (err: unknown) {
      throw deps.translate(err, 'subscribe');
    }
  }

  async function release(channel: string, own: Handler): Promise<void> {
    const entry = channels.get(channel);
    if (entry === undefined || !entry.handlers.delete(own) || entry.handlers.size > 0) return;
    channels.delete(channel);
    try {
      await client?.unsubscribe(channel);
    } catch {
      // Redis is away: the channel is resubscribed on reconnect, but nothing handles it.
    }
  }

  return {
    async subscribe(channel, handler) {
      const sub = connection();
      // Wrap so that the same function subscribed twice is two subscriptions.
      const own: Handler = (message) => handler(message);
      let entry = channels.get(channel);
      if (entry === undefined) {
        entry = { handlers: new Set(), active: activate(sub, channel) };
        channels.set(channel, entry);
      }
      entry.handlers.add(own);
      try {
        await entry.active;
      } catch (err: unknown) {
        entry.handlers.delete(own);
        if (channels.get(channel) === entry) channels.delete(channel);
        throw err;
      }
      return () => release(channel, own);
    },

    async close() {
      channels.clear();
      const sub = client;
      client = undefined;
      if (sub !== undefined) await quit(sub);
    },
  };
}

/** Graceful QUIT when connected, a plain disconnect otherwise (QUIT would fail fast anyway). */
export async function quit(client: Redis): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // fall through: the connection went away while quitting
    }
  }
  client.disconnect();
}
