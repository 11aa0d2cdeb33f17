/**
 * The Redis backend's token buckets (StateBackend.takeToken, leaseTokens): token-bucket.ts's arithmetic in
 * one Lua script, so a request costs one round trip and replicas taking from the same bucket
 * at once never both get its last token. One key per bucket (a hash: `n` tokens, `t` the ms
 * they were counted at), so a Cluster needs no hash tag; it expires once the bucket would be
 * full again, leaving nothing behind for an idle caller. The clock is the caller's (`nowMs`),
 * as for the byte budgets.
 */
import type { Evaluate } from './redis-budget.js';
import { checkLease, checkRate, ONE_TOKEN, type LeaseAnswer, type TokenAnswer, type TokenLease, type TokenRate } from './token-bucket.js';

// ARGV: perSecond, burst, nowMs, share, most. Answers {granted, 0} taken, {0, retryAfterMs} refused.
const TAKE = `
local perMs, burst, now = tonumber(ARGV[1]) / 1000, tonumber(ARGV[2]), tonumber(ARGV[3])
local share, most = tonumber(ARGV[4]), tonumber(ARGV[5])
local saved = redis.call('HMGET', KEYS[1], 'n', 't')
local tokens, at = burst, now
if saved[1] then
  at = math.max(now, tonumber(saved[2]))
  tokens = math.min(burst, tonumber(saved[1]) + math.max(0, now - tonumber(saved[2])) * perMs)
end
local granted, wait = 0, 0
if tokens >= 1 then
  granted = math.min(most, math.max(1, math.floor(tokens * share)))
  tokens = tokens - granted
else
  wait = math.ceil((1 - tokens) / perMs)
end
redis.call('HSET', KEYS[1], 'n', string.format('%.17g', tokens), 't', at)
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((burst - tokens) / perMs)))
return {granted, wait}
`;

export async function takeTokenOnRedis(evaluate: Evaluate, key: string, rate: TokenRate, nowMs: number): Promise<TokenAnswer> {
  const answer = await leaseTokensOnRedis(evaluate, key, rate, ONE_TOKEN, nowMs);
  return { allowed: answer.granted > 0, retryAfterMs: answer.retryAfterMs };
}

export async function leaseTokensOnRedis(evaluate: Evaluate, key: string, rate: TokenRate, lease: TokenLease, nowMs: number): Promise<LeaseAnswer> {
  checkRate(rate);
  checkLease(lease);
  const reply = (await evaluate('takeToken', TAKE, [key], [rate.perSecond, rate.burst, Math.floor(nowMs), lease.share, lease.most])) as [number, number];
  return { granted: Number(reply[0]), retryAfterMs: Number(reply[1]) };
}
