/**
 * The subscriber side of the Redis backend: one extra connection (a Redis connection in
 * subscribe mode can run nothing else), opened on the first subscribe, with any number of
 * handlers per channel. Channels arrive here already prefixed.
 *
 * It also tracks, per channel, whether the subscription is live (SubscriptionWatch in
 * state.ts): lost at once on the connection's 'close' event; live again once, after a
 * reconnect, Redis has acknowledged the SUBSCRIBE this module sends itself. ioredis's own
 * resubscribe (autoResubscribe) is switched off on this connection (redis.ts): nothing catches
 * its promise, so a reconnect that fails during it killed the process with an unhandled
 * rejection; and a connection lost before the acknowledgement made ioredis forget the
 * channels for good while a PING still answered, so revocations went unheard.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { StateLog, SubscriptionWatch } from './state.js';

type Handler = (message: string) => void;

/** How long to wait before subscribing again when the SUBSCRIBE after a reconnect failed. */
export const LIVE_CHECK_RETRY_MS = 1_000;
/** How long to wait before opening the next connection when one ended for good (a Cluster's node gone). */
export const REOPEN_MS = 100;

interface Subscription {
  readonly handler: Handler;
  readonly watch: SubscriptionWatch | undefined;
  /** What this subscription's watch was last told (calls alternate, starting with onLive). */
  live: boolean;
}

interface Channel {
  readonly subscriptions: Set<Subscription>;
  /** Settles when SUBSCRIBE was acknowledged; concurrent subscribers of a channel share it. */
  active: Promise<void>;
  /** SUBSCRIBE acknowledged once: from then on it is sent again after every reconnect. */
  subscribed: boolean;
  /** Subscribed on the current connection, and no 'close' since. */
  live: boolean;
}

export interface SubscriberDeps {
  /**
   * Opens the subscriber connection. A connection that ends for good (no more reconnects: a
   * Cluster's subscriber whose node is gone) is replaced by the next open(), whose 'ready'
   * subscribes every channel again.
   */
  open(): Redis;
  ready(client: Redis): Promise<void>;
  translate(err: unknown, op: string): Error;
  readonly log: StateLog;
}

export interface Subscriber {
  subscribe(channel: string, handler: Handler, watch?: SubscriptionWatch): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export function createSubscriber(deps: SubscriberDeps): Subscriber {
  const channels = new Map<string, Channel>();
  let client: Redis | undefined;
  /** Bumped on every 'close' of the connection: a check started before it proves nothing. */
  let generation = 0;
  let stopped = false;

  function tell(sub: Subscription, live: boolean): void {
    if (sub.live === live) return;
    sub.live = live;
    if (sub.watch === undefined) return;
    try {
      if (live) sub.watch.onLive();
      else sub.watch.onLost();
    } catch (err: unknown) {
      deps.log.warn({ err }, 'state subscription watcher failed');
    }
  }

  function setLive(entry: Channel, live: boolean): void {
    entry.live = live;
    for (const sub of [...entry.subscriptions]) tell(sub, live);
  }

  function connection(): Redis {
    if (client !== undefined) return client;
    const opened = deps.open();
    opened.on('message', function dispatch(channel: string, message: string) {
      for (const { handler } of [...(channels.get(channel)?.subscriptions ?? [])]) {
        try {
          handler(message);
        } catch (err: unknown) {
          deps.log.warn({ err, channel }, 'state subscriber failed');
        }
      }
    });
    opened.on('close', function subscriptionsLost() {
      generation++;
      for (const entry of channels.values()) setLive(entry, false);
    });
    opened.on('ready', function confirmResubscribed() {
      void confirmLive(opened, generation);
    });
    opened.on('end', function replaceEnded() {
      if (client !== opened) return;
      client = undefined;
      setTimeout(() => {
        if (!stopped && client === undefined && [...channels.values()].some((entry) => entry.subscribed)) connection();
      }, REOPEN_MS).unref();
    });
    return (client = opened);
  }

  /** After a (re)connect: SUBSCRIBE again until Redis acknowledges it; then those channels are live. */
  async function confirmLive(sub: Redis, gen: number): Promise<void> {
    while (client === sub && generation === gen) {
      const names = [...channels].filter(([, entry]) => entry.subscribed).map(([name]) => name);
      if (names.length === 0) return;
      try {
        await sub.subscribe(...names);
      } catch (err: unknown) {
        deps.log.warn({ err: deps.translate(err, 'subscribe') }, 'state subscriber: subscribing again after a reconnect failed; retrying');
        await sleep(LIVE_CHECK_RETRY_MS, undefined, { ref: false });
        continue;
      }
      if (client !== sub || generation !== gen) return;
      for (const name of names) {
        const entry = channels.get(name);
        if (entry !== undefined) setLive(entry, true);
      }
      return;
    }
  }

  async function activate(sub: Redis, channel: string, entry: Channel): Promise<void> {
    try {
      await deps.ready(sub);
      const gen = generation;
      await sub.subscribe(channel);
      entry.subscribed = true;
      // A 'close' since the SUBSCRIBE: confirmLive() will say when it is live again.
      if (generation === gen && client === sub) entry.live = true;
    } catch (err: unknown) {
      throw deps.translate(err, 'subscribe');
    }
  }

  async function release(channel: string, own: Subscription): Promise<void> {
    const entry = channels.get(channel);
    if (entry === undefined || !entry.subscriptions.delete(own) || entry.subscriptions.size > 0) return;
    channels.delete(channel);
    try {
      await client?.unsubscribe(channel);
    } catch {
      // Redis is away: the channel is resubscribed on reconnect, but nothing handles it.
    }
  }

  return {
    async subscribe(channel, handler, watch) {
      const sub = connection();
      // A record per call, so that the same function subscribed twice is two subscriptions.
      const own: Subscription = { handler, watch, live: false };
      let entry = channels.get(channel);
      if (entry === undefined) {
        entry = { subscriptions: new Set(), active: Promise.resolve(), subscribed: false, live: false };
        entry.active = activate(sub, channel, entry);
        channels.set(channel, entry);
      }
      entry.subscriptions.add(own);
      try {
        await entry.active;
      } catch (err: unknown) {
        entry.subscriptions.delete(own);
        if (channels.get(channel) === entry) channels.delete(channel);
        throw err;
      }
      if (entry.live && channels.get(channel) === entry && entry.subscriptions.has(own)) tell(own, true);
      return () => release(channel, own);
    },

    async close() {
      // Cleared first: the 'close' event of the quit below tells no watcher.
      stopped = true;
      channels.clear();
      const sub = client;
      client = undefined;
      if (sub !== undefined) await quit(sub);
    },
  };
}

/** Graceful QUIT when connected, a plain disconnect otherwise (QUIT would fail fast anyway). */
export async function quit(client: { readonly status: string; quit(): Promise<unknown>; disconnect(): void }): Promise<void> {
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
