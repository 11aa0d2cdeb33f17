/**
 * The Redis backend's byte budgets (StateBackend.charge/release): one Lua script per call, so a
 * charge is one round trip whatever the budget holds. A budget is three keys with the budget's
 * name as hash tag, so a Cluster keeps them in one slot and the script may touch all three:
 *
 *   <budget>:{<budget>}:ledger   hash: member -> "<source>\t<bytes>"
 *   <budget>:{<budget>}:until    sorted set: member, scored by the epoch ms its charge ends
 *   <budget>:{<budget>}:held     hash: source -> bytes it holds; field "*" -> the total
 *
 * Each call first gives back up to PRUNE_PER_CALL expired charges (at least as many as it can
 * add: the ledger never grows by expired ones), then answers. All three keys live as long as
 * their longest charge, so an idle budget leaves nothing behind. The clock is the caller's
 * (`nowMs`), the same on every replica's call within their clocks' drift.
 */
import { checkCharge, type BudgetAnswer, type BudgetCharge, type BudgetLimits } from './state.js';

export const PRUNE_PER_CALL = 32;

const keysOf = (budget: string): [string, string, string] => [`${budget}:{${budget}}:ledger`, `${budget}:{${budget}}:until`, `${budget}:{${budget}}:held`];

const DROP = `
local function drop(member)
  local entry = redis.call('HGET', KEYS[1], member)
  redis.call('ZREM', KEYS[2], member)
  if not entry then return end
  redis.call('HDEL', KEYS[1], member)
  local tab = string.find(entry, '\\t', 1, true)
  local source = string.sub(entry, 1, tab - 1)
  local bytes = tonumber(string.sub(entry, tab + 1))
  if redis.call('HINCRBY', KEYS[3], source, -bytes) <= 0 then redis.call('HDEL', KEYS[3], source) end
  if redis.call('HINCRBY', KEYS[3], '*', -bytes) <= 0 then redis.call('HDEL', KEYS[3], '*') end
end
`;

// ARGV: member, source, bytes, untilMs, nowMs, perSourceBytes, totalBytes, prunePerCall.
// Answers {1, 1} new, {1, 2} renewed, {0, 1, held} source bound, {0, 2, held} total bound.
const CHARGE = `${DROP}
local member, source, bytes, untilMs, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[8]))) do drop(m) end
local score = redis.call('ZSCORE', KEYS[2], member)
local answer
if score and tonumber(score) > now then
  local entry = redis.call('HGET', KEYS[1], member)
  local tab = string.find(entry, '\\t', 1, true)
  local owner = string.sub(entry, 1, tab - 1)
  local delta = bytes - tonumber(string.sub(entry, tab + 1))
  redis.call('HINCRBY', KEYS[3], owner, delta)
  redis.call('HINCRBY', KEYS[3], '*', delta)
  redis.call('HSET', KEYS[1], member, owner .. '\\t' .. bytes)
  answer = {1, 2}
else
  drop(member)
  local held = tonumber(redis.call('HGET', KEYS[3], source) or '0')
  if held + bytes > tonumber(ARGV[6]) then return {0, 1, held} end
  local total = tonumber(redis.call('HGET', KEYS[3], '*') or '0')
  if total + bytes > tonumber(ARGV[7]) then return {0, 2, total} end
  redis.call('HINCRBY', KEYS[3], source, bytes)
  redis.call('HINCRBY', KEYS[3], '*', bytes)
  redis.call('HSET', KEYS[1], member, source .. '\\t' .. bytes)
  answer = {1, 1}
end
redis.call('ZADD', KEYS[2], untilMs, member)
local keep = math.max(untilMs - now, 1)
for i = 1, 3 do
  if redis.call('PTTL', KEYS[i]) < keep then redis.call('PEXPIRE', KEYS[i], keep) end
end
return answer`;

const RELEASE = `${DROP}
drop(ARGV[1])
return 1`;

/** What the script runner of redis.ts offers: EVAL with the fail-fast rules and error translation. */
export type Evaluate = (op: string, script: string, keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

export async function chargeBudget(evaluate: Evaluate, budget: string, charge: BudgetCharge, limits: BudgetLimits, nowMs: number): Promise<BudgetAnswer> {
  checkCharge(budget, charge, limits);
  const reply = await evaluate('charge', CHARGE, keysOf(budget), [
    charge.member, charge.source, charge.bytes, charge.untilMs, nowMs, limits.perSourceBytes, limits.totalBytes, PRUNE_PER_CALL,
  ]);
  if (!Array.isArray(reply)) throw new Error(`charge: unexpected reply ${JSON.stringify(reply)}`);
  const [admitted, which, held] = reply.map(Number);
  if (admitted === 1) return { admitted: true, as: which === 2 ? 'renewed' : 'new' };
  return { admitted: false, bound: which === 2 ? 'total' : 'source', heldBytes: held ?? 0 };
}

export async function releaseBudget(evaluate: Evaluate, budget: string, member: string): Promise<void> {
  if (budget === '' || /[{}]/.test(budget)) throw new RangeError(`a budget's name is not empty and holds no brace: ${JSON.stringify(budget)}`);
  await evaluate('release', RELEASE, keysOf(budget), [member]);
}
