/**
 * How many workers to start by default: the CPUs this container may use, not the node's. In a
 * pod with a CPU limit, os.availableParallelism() still counts every CPU of the node, and each
 * worker costs about 110 MB, so a 4-CPU node would start four and overrun a 512Mi limit sized
 * for one or two.
 *
 * The limit comes from the cgroup: v2 `cpu.max` ("<quota> <period>" or "max <period>"), else v1
 * `cpu/cpu.cfs_quota_us` over `cpu.cfs_period_us` (-1: none). A fraction rounds down, with at
 * least one worker: a worker per started CPU would be throttled and cost memory for nothing.
 * A file that cannot be read or parsed means "no limit known": then the process's own count
 * (availableParallelism, which already follows the CPU affinity mask) decides.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

export const CGROUP_ROOT = '/sys/fs/cgroup';

export interface CpuLimitSources {
  /** Where the cgroup file system is mounted; a test points it at a directory of its own. */
  readonly cgroupRoot?: string;
  /** The CPUs the process may run on; defaults to os.availableParallelism(). */
  readonly parallelism?: number;
}

/** The container's CPU limit in whole CPUs (at least 1), or undefined when there is none. */
export function cgroupCpuLimit(cgroupRoot: string = CGROUP_ROOT): number | undefined {
  const v2 = readText(join(cgroupRoot, 'cpu.max'));
  if (v2 !== undefined) {
    const [quota, period] = v2.split(/\s+/);
    return quotaOverPeriod(quota, period);
  }
  for (const dir of ['cpu', 'cpu,cpuacct']) {
    const quota = readText(join(cgroupRoot, dir, 'cpu.cfs_quota_us'));
    if (quota !== undefined) return quotaOverPeriod(quota, readText(join(cgroupRoot, dir, 'cpu.cfs_period_us')));
  }
  return undefined;
}

/** The default worker count with Redis: the container's CPU limit, never more than the CPUs the process may use. */
export function defaultWorkerCount(sources: CpuLimitSources = {}): number {
  const cpus = Math.max(1, sources.parallelism ?? availableParallelism());
  const limit = cgroupCpuLimit(sources.cgroupRoot);
  return limit === undefined ? cpus : Math.min(limit, cpus);
}

function quotaOverPeriod(quota: string | undefined, period: string | undefined): number | undefined {
  if (quota === undefined || quota === 'max' || period === undefined) return undefined;
  const q = Number(quota);
  const p = Number(period);
  if (!Number.isFinite(q) || !Number.isFinite(p) || q <= 0 || p <= 0) return undefined; // v1 says -1 for none
  return Math.max(1, Math.floor(q / p));
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
