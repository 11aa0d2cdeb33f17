/**
 * The Redis state backend (ioredis), shared by every replica pointed at the same Redis.
 *
 * Fail fast, never queue: a call made while Redis is unreachable rejects with
 * StateUnavailable within about half a second instead of waiting for a reconnect, so that
 * login throttling can fall back to memory and logins keep working. Rejected alternatives:
 * ioredis' offline queue (the default) makes callers hang until Redis is back, and with a
 * `commandTimeout` alone a queued write is still sent after the caller was told it failed.
 * The client keeps reconnecting in the background (RETRY_MAX_MS apart at most) and calls
 * work again as soon as it is ready; subscriptions are restored by ioredis itself, and
 * ./redis-subscriber.ts tells a subscriber's SubscriptionWatch when they are lost and live.
 * A client ioredis gives up on (a failover during a reconnect ends it) is connected again by
 * ./redis-revive.ts; connection() tells /metrics whether the main connection is ready.
 *
 * Keys get the `svc:` prefix from ioredis' keyPrefix (Lua KEYS included). Pub/sub channels
 * are not keys, so ioredis leaves them alone and this file prefixes them itself.
 *
 * One Redis, a Sentinel-watched primary or a Cluster (./redis-topology.ts, clients in
 * ./redis-client.ts). Every Lua script keeps its keys in one Cluster slot: most touch one key,
 * setIfAbsentFor's mark carries its owner's key as hash tag (state.ts, markKeyFor), and a byte
 * budget's keys carry its name (./redis-budget.ts).
 * A write asked `replicated` waits for a replica (WAIT) on Sentinel and Cluster.
 */
import { Cluster, Redis } from 'ioredis';
import { openClient, openSubscriber, type RedisClient } from './redis-client.js';
import { describeTopology, redactUrl, type RedisTopology } from './redis-topology.js';
import {
  checkTtl,
  checkPositiveInteger,
  checkTtlMs,
  KEY_PREFIX,
  NotReplicated,
  StateUnavailable,
  type StateBackend,
  type StateLog,
  type WriteOptions,
} from './state.js';
import { createSubscriber, quit } from './redis-subscriber.js';
import { chargeBudget, releaseBudget, type Evaluate } from './redis-budget.js';
import { checkEvictionPolicy } from './redis-eviction.js';
import { reviveWhenEnded } from './redis-revive.js';
import { leaseTokensOnRedis, takeTokenOnRedis } from './redis-token-bucket.js';

export { COMMAND_TIMEOUT_MS, CONNECT_TIMEOUT_MS, RETRY_MAX_MS } from './redis-client.js';
export { redactUrl } from './redis-topology.js';

/** While a connection attempt is in progress, calls wait this long for it, then fail. */
export const READY_WAIT_MS = 200;
/** A `replicated` write fails when no replica has acknowledged it by then (WAIT's timeout). */
export const REPLICA_WAIT_MS = 500;

export type RedisStateOptions =
  | {
      /** redis://[user:password@]host:port[/db]; never logged with its password. */
      readonly url: string;
      readonly log: StateLog;
    }
  | { readonly topology: RedisTopology; readonly log: StateLog };

/** The Redis backend, with what the start-up log and `validate` say about it. */
export interface RedisState extends StateBackend {
  readonly topology: RedisTopology;
  /** One line naming the topology in force and what it found (primary, node count); asks Redis. */
  inspect(): Promise<string>;
}

// INCR, and set the TTL only if this call created the key: atomic in one script.
const INCR_WITH_TTL = `
local created = redis.call('EXISTS', KEYS[1]) == 0
local value = redis.call('INCR', KEYS[1])
if created then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return value`;

// Unless the hash already has ARGV[4] fields (0: no bound) and not this one, HSET, then make
// the hash live at least ARGV[3] ms (0: leave its TTL): a new hash gets that TTL, a shorter TTL
// is raised, a longer one kept, and a hash that existed without TTL keeps none (PTTL -1).
// One script, so no caller ever sees (or leaves behind, by dying in between) a hash without
// the TTL it asked for, or one past its bound. PEXPIRE's GT flag would treat the new hash as
// persistent, hence Lua.
const HSET_EXTEND_TTL = `
local max = tonumber(ARGV[4])
if max > 0 and redis.call('HLEN', KEYS[1]) >= max and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local existed = redis.call('EXISTS', KEYS[1]) == 1
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = tonumber(ARGV[3])
if ttl == 0 then return 1 end
if not existed then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  local left = redis.call('PTTL', KEYS[1])
  if left >= 0 and left < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
end
return 1`;

// SET NX with the TTL KEYS[2] has left (none when it has none), only while KEYS[2] exists;
// answers that TTL (-1: none) when it stored the mark. One slot: KEYS[1] carries KEYS[2] as its
// hash tag. PTTL can answer 0 in a key's last millisecond, which SET PX refuses: 1 then.
const SET_IF_ABSENT_FOR = `
local ttl = redis.call('PTTL', KEYS[2])
if ttl == -2 then return 'no-owner' end
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if ttl == -1 then redis.call('SET', KEYS[1], ARGV[1]) return -1 end
ttl = math.max(ttl, 1)
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return ttl`;

/** DECR only an existing key above 0: DECR on an absent key would make -1 with no TTL. */
const DECREMENT_IF_POSITIVE = `
local value = redis.call('GET', KEYS[1])
if not value then return false end
if tonumber(value) == nil then return redis.error_reply('ERR value is not an integer or out of range') end
if tonumber(value) <= 0 then return tonumber(value) end
return redis.call('DECR', KEYS[1])`;

/** Make KEYS[1] at least ARGV[1]: created with TTL ARGV[2] (0: none), a smaller value replaced keeping its TTL. */
const RAISE_TO = `
local value = redis.call('GET', KEYS[1])
local floor = tonumber(ARGV[1])
if not value then
  if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('SET', KEYS[1], ARGV[1]) end
  return floor
end
if tonumber(value) == nil then return redis.error_reply('ERR value is not an integer or out of range') end
if tonumber(value) >= floor then return tonumber(value) end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return floor`;

/** PUBLISH ARGV[1] ARGV[2] on the primary of KEYS[1], which only routes it (Cluster). */
const PUBLISH_FROM_CHANNEL_SLOT = "return redis.call('PUBLISH', ARGV[1], ARGV[2])";

/** A Cluster's redirection, seen only in a pipeline (ioredis follows them for single commands). */
const REDIRECTED = /^(MOVED|ASK) /;

/** ioredis's own refusal of a command whose keys are in two Cluster slots. */
const CROSS_SLOT = /keys in a pipeline command should belong to the same slot|^CROSSSLOT\b/;

// Server replies that mean "not available right now", not "you made a mistake". A MOVED or ASK
// that reaches a caller is one ioredis did not follow (a slot changing hands in a failover, an
// automatically pipelined command): the slot map is moving, not a bug, so the caller falls back.
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN|MOVED|ASK)\b/;

export function createRedisState(options: RedisStateOptions): RedisState {
  const { log } = options;
  const topology: RedisTopology = 'topology' in options ? options.topology : { kind: 'standalone', url: options.url };
  const where = topology.kind === 'standalone' ? redactUrl(topology.url) : describeTopology(topology);
  let closed = false;
  let subscriberAttempts = 0;
  let revived = 0;
  /** Watched, and connected again whenever ioredis gives up on it (./redis-revive.ts says when). */
  const open = (what: string, options: Parameters<typeof openClient>[1]): RedisClient => {
    const opened = openClient(topology, options);
    watchConnection(opened, what, where, log);
    reviveWhenEnded(opened, { what, where, log, closed: () => closed, revived: () => void revived++ });
    return opened;
  };
  const client = open('redis', { connectionName: 'svc' });
  // An evicted revocation or marker is a lost revocation (./redis-eviction.ts): said once, at the first connection.
  client.once('ready', () => void checkEvictionPolicy(client, where, log));
  /** Sentinel and Cluster: replicated writes wait (WAIT) on a connection of their own, so no other command waits behind them. */
  const replicas = topology.kind === 'standalone' ? undefined : lazyClient(() => open('redis (replicated writes)', { connectionName: 'svc-replicated', commandTimeoutMs: REPLICA_WAIT_MS + 500 }));
  // Opened now, beside the main connection, not at the first replicated write: that write would
  // give it READY_WAIT_MS to ask the sentinels and connect, and under load that took longer (a
  // worker's first logout answered 503).
  replicas?.get();

  /** Runs one command with the fail-fast rules and error translation. */
  async function run<T>(op: string, command: (c: RedisClient) => Promise<T>): Promise<T> {
    if (closed) throw new StateUnavailable('state backend is closed');
    await whenReady(client, where);
    try {
      return await command(client);
    } catch (err: unknown) {
      throw translate(err, op, where);
    }
  }

  /**
   * A write that resolves only once a replica has it: the write and WAIT 1 in one pipeline on
   * the replicated-writes connection (on a Cluster the pipeline goes to the key's primary, and
   * WAIT with it). Without `replicated`, or on one Redis (no failover to lose it in), a plain write.
   */
  async function write<T>(op: string, key: string, opts: WriteOptions | undefined, command: (c: RedisClient) => Promise<T>, queue: (p: ReturnType<RedisClient['pipeline']>) => void): Promise<T | undefined> {
    if (opts?.replicated !== true || replicas === undefined) return run(op, command);
    if (closed) throw new StateUnavailable('state backend is closed');
    const c = replicas.get();
    await whenReady(c, where);
    for (let attempt = 0; ; attempt++) {
      let replies: [Error | null, unknown][] | null;
      try {
        const pipeline = c.pipeline();
        queue(pipeline);
        pipeline.wait(1, REPLICA_WAIT_MS);
        replies = await pipeline.exec();
      } catch (err: unknown) {
        throw translate(err, op, where);
      }
      const [first, acked] = replies ?? [];
      // A pipeline is not redirected by ioredis when only some of its replies are MOVED (WAIT
      // answered): the write did not run; a plain read of the key follows the redirection and
      // updates the slot map, then the pipeline is sent once more.
      if (first?.[0] != null && REDIRECTED.test(first[0].message) && attempt === 0) {
        await c.exists(key).catch(() => undefined);
        continue;
      }
      if (first?.[0] != null) throw translate(REDIRECTED.test(first[0].message) ? new StateUnavailable(first[0].message) : first[0], op, where);
      if (acked?.[0] != null) throw translate(acked[0], op, where);
      if (Number(acked?.[1]) < 1) throw new NotReplicated(`redis ${op} at ${where}: no replica acknowledged the write within ${REPLICA_WAIT_MS} ms`);
      return first?.[1] as T;
    }
  }

  const evaluate: Evaluate = (op, script, keys, args) => run(op, (c) => c.eval(script, keys.length, ...keys, ...args));

  const subscriber = createSubscriber({
    open() {
      // redis-subscriber.ts subscribes again itself after a reconnect, and says why.
      const sub = openSubscriber(topology, client, subscriberAttempts++);
      watchConnection(sub, 'redis subscriber', where, log);
      return sub;
    },
    ready: (sub) => whenReady(sub, where),
    translate: (err, op) => translate(err, op, where),
    log,
  });

  return {
    kind: 'redis',
    topology,

    async inspect() {
      await run('ping', (c) => c.ping());
      return `${describeTopology(topology)}: ${await found(client)}`;
    },

    get: (key) => run('get', (c) => c.get(key)),

    async set(key, value, opts) {
      const ttl = checkTtl(opts);
      await write('set', key, opts, (c) => (ttl === undefined ? c.set(key, value) : c.set(key, value, 'PX', ttl)), (p) => {
        if (ttl === undefined) p.set(key, value);
        else p.set(key, value, 'PX', ttl);
      });
    },

    async setIfAbsent(key, value, opts) {
      const ttl = checkTtl(opts);
      const reply = await run('setIfAbsent', (c) =>
        ttl === undefined ? c.set(key, value, 'NX') : c.set(key, value, 'PX', ttl, 'NX'),
      );
      return reply === 'OK';
    },

    async setIfAbsentFor(key, value, owner, opts) {
      const reply = await run('setIfAbsentFor', (c) => c.eval(SET_IF_ABSENT_FOR, 2, key, owner, value));
      if (reply === 'exists' || reply === 'no-owner') return reply;
      if (typeof reply !== 'number') throw new Error(`setIfAbsentFor: unexpected reply ${JSON.stringify(reply)}`);
      const former = opts?.formerKey;
      if (former === undefined) return 'set';
      // The earlier name's mark, in a slot of its own: claimed after, so one of two claimants wins.
      const claimed = await run('setIfAbsentFor', (c) => (reply === -1 ? c.set(former, value, 'NX') : c.set(former, value, 'PX', reply, 'NX')));
      return claimed === 'OK' ? 'set' : 'exists';
    },

    // GETDEL (Redis 6.2+): read and remove in one command, so exactly one caller gets it.
    take: async (key, opts) => (await write('take', key, opts, (c) => c.getdel(key), (p) => p.getdel(key))) ?? null,

    async expire(key, ttlMs) {
      const ttl = checkTtlMs(ttlMs, 'ttlMs');
      return (await run('expire', (c) => c.pexpire(key, ttl))) === 1;
    },

    async delete(key, opts) {
      await write('delete', key, opts, (c) => c.del(key), (p) => p.del(key));
    },

    async incr(key, opts) {
      const ttl = checkTtl(opts);
      if (ttl === undefined) return run('incr', (c) => c.incr(key));
      const reply = await run('incr', (c) => c.eval(INCR_WITH_TTL, 1, key, ttl));
      return Number(reply);
    },

    async decrement(key) {
      const reply = await run('decrement', (c) => c.eval(DECREMENT_IF_POSITIVE, 1, key));
      return reply === null ? null : Number(reply);
    },

    async raiseTo(key, atLeast, opts) {
      checkPositiveInteger(atLeast, 'atLeast');
      const ttl = checkTtl(opts) ?? 0;
      const reply = await write('raiseTo', key, opts, (c) => c.eval(RAISE_TO, 1, key, atLeast, ttl), (p) => p.eval(RAISE_TO, 1, key, atLeast, ttl));
      return Number(reply);
    },

    charge: (budget, charge, limits, nowMs) => chargeBudget(evaluate, budget, charge, limits, nowMs),

    release: (budget, member) => releaseBudget(evaluate, budget, member),

    takeToken: (key, rate, nowMs) => takeTokenOnRedis(evaluate, key, rate, nowMs),

    leaseTokens: (key, rate, lease, nowMs) => leaseTokensOnRedis(evaluate, key, rate, lease, nowMs),

    async ttlMs(key) {
      const ms = await run('ttlMs', (c) => c.pttl(key));
      return ms < 0 ? null : ms;   // -2: absent, -1: no expiry
    },

    hashGet: (key, field) => run('hashGet', (c) => c.hget(key, field)),

    async hashSet(key, field, value, opts) {
      const extend = opts?.extendTtlMs;
      const max = opts?.maxFields;
      if (extend === undefined && max === undefined) {
        await write('hashSet', key, opts, (c) => c.hset(key, field, value), (p) => p.hset(key, field, value));
        return true;
      }
      // 0: no TTL to extend, no bound (both are positive when given).
      const ttl = extend === undefined ? 0 : checkTtlMs(extend, 'extendTtlMs');
      const bound = max === undefined ? 0 : checkPositiveInteger(max, 'maxFields');
      const reply = await write('hashSet', key, opts, (c) => c.eval(HSET_EXTEND_TTL, 1, key, field, value, ttl, bound), (p) => p.eval(HSET_EXTEND_TTL, 1, key, field, value, ttl, bound));
      return reply === 1;
    },

    async hashSetIfAbsent(key, field, value) {
      return (await run('hashSetIfAbsent', (c) => c.hsetnx(key, field, value))) === 1;
    },

    async time() {
      const [seconds, micros] = await run('time', (c) => c.time());
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    },

    async hashDelete(key, ...fields) {
      if (fields.length === 0) return;
      await run('hashDelete', (c) => c.hdel(key, ...fields));
    },

    hashGetAll: (key) => run('hashGetAll', (c) => c.hgetall(key)),

    hashLength: (key) => run('hashLength', (c) => c.hlen(key)),

    async publish(channel, message) {
      if (topology.kind === 'cluster') {
        // A key-less PUBLISH goes to any node, and two messages sent through two nodes may reach a
        // subscriber in either order. Sent from a script keyed by the channel, every message of a
        // channel leaves from that key's primary, so each publisher's messages stay in order.
        await run('publish', (c) => c.eval(PUBLISH_FROM_CHANNEL_SLOT, 1, `${KEY_PREFIX}pubsub:{${channel}}`, KEY_PREFIX + channel, message));
        return;
      }
      await run('publish', (c) => c.publish(KEY_PREFIX + channel, message));
    },

    async subscribe(channel, handler, watch) {
      if (closed) throw new StateUnavailable('state backend is closed');
      return subscriber.subscribe(KEY_PREFIX + channel, handler, watch);
    },

    async ping() {
      await run('ping', (c) => c.ping());
    },

    connection: () => ({ connected: !closed && client.status === 'ready', revived }),

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([subscriber.close(), quit(client), ...(replicas?.opened() !== undefined ? [quit(replicas.opened() as RedisClient)] : [])]);
    },
  };
}

/** Opened on first use. */
function lazyClient(open: () => RedisClient): { get(): RedisClient; opened(): RedisClient | undefined } {
  let client: RedisClient | undefined;
  return {
    get: () => (client ??= open()),
    opened: () => client,
  };
}

/** What the client found: the primary it writes to (Sentinel), the nodes it knows (Cluster). */
async function found(client: RedisClient): Promise<string> {
  if (client instanceof Cluster) {
    // The cluster's own count: the client's node list fills in as it connects.
    const info = String(await client.call('CLUSTER', 'INFO'));
    const field = (name: string) => new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? '?';
    return `${field('cluster_known_nodes')} nodes, ${field('cluster_size')} primaries`;
  }
  const stream = (client as Redis & { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
  // ROLE may be denied by an ACL: what was found is still worth saying.
  const role = ((await client.call('ROLE').catch(() => ['unknown'])) as unknown[]);
  const address = stream?.remoteAddress !== undefined ? `${stream.remoteAddress}:${String(stream.remotePort)}` : 'unknown address';
  return `primary at ${address} (role ${String(role[0])})`;
}

/**
 * Resolves when the client is ready. While a connection attempt is under way (first
 * connect, or a reconnect in progress) it waits up to READY_WAIT_MS; between attempts, or
 * after that wait, it rejects at once: a caller never waits for the next retry.
 */
export function whenReady(client: RedisClient, where: string): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status !== 'connecting' && client.status !== 'connect') {
    return Promise.reject(new StateUnavailable(`redis at ${where} is unreachable (${client.status})`));
  }
  let waiting = pendingReady.get(client);
  if (waiting === undefined) {
    waiting = waitForReady(client, where).finally(() => pendingReady.delete(client));
    pendingReady.set(client, waiting);
  }
  return waiting;
}

/** One wait per client however many calls queue behind it (one 'ready' listener, not 50). */
const pendingReady = new WeakMap<RedisClient, Promise<void>>();

function waitForReady(client: RedisClient, where: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const fail = (why: string) => {
      done();
      reject(new StateUnavailable(`redis at ${where} is unreachable (${why})`));
    };
    const onReady = () => {
      done();
      resolve();
    };
    const onClose = () => fail('connection refused or lost');
    const timer = setTimeout(() => fail(`no connection after ${READY_WAIT_MS} ms`), READY_WAIT_MS);
    function done() {
      clearTimeout(timer);
      client.off('ready', onReady).off('close', onClose);
    }
    client.once('ready', onReady).once('close', onClose);
  });
}

/** Server-side mistakes (WRONGTYPE, not an integer) stay as they are; the rest is unavailability. */
export function translate(err: unknown, op: string, where: string): Error {
  if (err instanceof StateUnavailable) return err;
  const isReply = err instanceof Error && err.name === 'ReplyError';
  if (isReply && !TRANSIENT_REPLY.test(err.message)) return err;
  // ioredis refuses keys of two Cluster slots itself, before Redis would (CROSSSLOT): a bug too.
  if (err instanceof Error && CROSS_SLOT.test(err.message)) return err;
  const reason = err instanceof Error ? err.message : String(err);
  return new StateUnavailable(`redis ${op} failed at ${where}: ${reason}`, { cause: err });
}

/** Logs the first error of an outage and the recovery, not every reconnect attempt. */
function watchConnection(client: RedisClient, what: string, where: string, log: StateLog): void {
  let down = false;
  client.on('error', (err: Error) => {
    if (down) return;
    down = true;
    log.warn({ err: { message: err.message }, redis: where }, `${what} unreachable; retrying`);
  });
  client.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({ redis: where }, `${what} connection restored`);
  });
}
