/**
 * The load of bench/sso-login.ts: N workers looping one step for a fixed time, and the CPU time
 * each process group (and the bench itself) used meanwhile, read from /proc.
 */
import { loadavg } from 'node:os';
import { groupCpuSeconds } from './sso-login-procs.js';

/** Hard cap on iterations per worker and phase, beside the time limit. */
const MAX_ITERATIONS = 1_000_000;

/** CPU seconds each process group used during a phase, and the bench's own. */
export type CpuUse = Map<string, number>;

/** One phase: operations done and failed, its length, the CPU each group used, the load average before and after. */
export interface Tally { ok: number; errors: number; seconds: number; firstError?: string; cpu: CpuUse; load: [number, number] }

/** Process groups to account CPU to (filled in as the processes start). */
export const groups = new Map<string, number>();

async function cpuNow(): Promise<CpuUse> {
  const use = await groupCpuSeconds(groups);
  const self = process.cpuUsage();
  use.set('bench', (self.user + self.system) / 1e6);
  return use;
}

/** N workers, each looping `step` until the time is up (or the iteration cap). */
export async function load(workers: number, seconds: number, step: (worker: number, i: number) => Promise<void>): Promise<Tally> {
  const cpuBefore = await cpuNow();
  const loadBefore = loadavg()[0] ?? 0;
  const tally: Tally = { ok: 0, errors: 0, seconds: 0, cpu: new Map(), load: [loadBefore, loadBefore] };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; i < MAX_ITERATIONS && performance.now() < deadline; i++) {
      try {
        await step(w, i);
        tally.ok++;
      } catch (err) {
        tally.errors++;
        tally.firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  }));
  tally.seconds = (performance.now() - started) / 1000;
  const cpuAfter = await cpuNow();
  for (const [name, after] of cpuAfter) tally.cpu.set(name, after - (cpuBefore.get(name) ?? 0));
  tally.load[1] = loadavg()[0] ?? 0;
  return tally;
}

/** Operations per second. */
export const rate = (t: Tally): number => t.ok / t.seconds;

/** CPU ms per operation of one process group in a phase. */
export const cpuMsPer = (t: Tally, who: string): number => (1000 * (t.cpu.get(who) ?? 0)) / Math.max(t.ok, 1);

