-- wrk script: every connection waits a random time (uniform, mean WRK_DELAY_MS) between a
-- response and its next request, so the offered load is about
-- connections * 1000 / (WRK_DELAY_MS + latency) requests per second, below what any target can
-- serve, and the connections do not fall into step (a constant wait makes them arrive in bursts).
-- wrk times each request from its write, without the wait: the latency a proxy adds when it is
-- not saturated.
local mean_ms = tonumber(os.getenv("WRK_DELAY_MS") or "10")
math.randomseed(os.time())
function delay()
  return math.random(0, 2 * mean_ms)
end
