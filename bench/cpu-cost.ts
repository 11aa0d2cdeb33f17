/**
 * The CPU one call of a function costs, against a reference operation measured in the same
 * rounds: a ratio, so the host's speed and other load (which slow both alike) cancel out. Each
 * round runs both `calls` times after a warm-up; the ratio of the cheapest round of each is
 * returned.
 * Used by bench/key-objects.ts.
 */
const ROUNDS = 7;

function cpuMicros(fn: () => unknown, calls: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

export function costRatio(fn: () => unknown, reference: () => unknown, calls = 2000): number {
  for (let i = 0; i < calls; i++) {
    fn();
    reference();
  }
  let best = Infinity;
  let bestReference = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    best = Math.min(best, cpuMicros(fn, calls));
    bestReference = Math.min(bestReference, cpuMicros(reference, calls));
  }
  return best / bestReference;
}
