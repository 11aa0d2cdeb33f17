/**
 * The Redis backend's token buckets (StateBackend.takeToken): token-bucket.ts's arithmetic in
 * one Lua script, so a request costs one round trip and replicas taking from the same bucket
 * at once never both get its last token. One key per bucket (a hash: `n` tokens, `t` the ms
 * they were counted at), so a Cluster needs no hash tag; it expires once the bucket would be
 * full again, leaving nothing behind for an idle caller. The clock is the caller's (`nowMs`),
 * as for the byte budgets.
 */
import type { Evaluate } from './redis-budget.js';
import { checkRate, type TokenAnswer, type TokenRate } from './token-bucket.js';

// ARGV: perSecond, burst, nowMs. Answers {1, 0} allowed, {0, retryAfterMs} refused.
const TAKE = `
local perMs, burst, now = tonumber(ARGV[1]) / 1000, tonumber(ARGV[2]), tonumber(ARGV[3])
local saved = redis.call('HMGET', KEYS[1], 'n', 't')
local tokens, at = burst, now
if saved[1] then
  at = math.max(now, tonumber(saved[2]))
  tokens = math.min(burst, tonumber(saved[1]) + math.max(0, now - tonumber(saved[2])) * perMs)
end
local allowed, wait = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / perMs)
end
redis.call('HSET', KEYS[1], 'n', string.format('%.17g', tokens), 't', at)
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((burst - tokens) / perMs)))
return {allowed, wait}
`;

export async function takeTokenOnRedis(evaluate: Evaluate, key: string, rate: TokenRate, nowMs: number): Promise<TokenAnswer> {
  checkRate(rate);
  const reply = (await evaluate('takeToken', TAKE, [key], [rate.perSecond, rate.burst, Math.floor(nowMs)])) as [number, number];
  return { allowed: Number(reply[0]) === 1, retryAfterMs: Number(reply[1]) };
}
