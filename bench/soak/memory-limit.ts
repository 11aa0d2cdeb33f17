/**
 * A memory limit on one process, as a container's would be: a cgroup of its own (the v1 memory
 * controller, or v2's memory.max), so that the soak can show whether svc lives, under its load and
 * faults, in the memory docs/operations.md sizes a worker for. Node sizes its heap from such a
 * limit at start, as it does in a container. Where no cgroup can be made (not root, no memory
 * controller) the run does not start, and says why: the limit was asked for.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryLimit {
  readonly limitMb: number;
  /** `argv` (a command and its arguments) run inside the cgroup: the process joins it, then execs. */
  wrap(argv: readonly string[]): readonly string[];
  /** The most the cgroup held, in MB. */
  peakMb(): number | undefined;
  /** How many times the kernel killed a process of the cgroup for memory. */
  oomKills(): number | undefined;
  remove(): void;
}

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function counter(text: string | undefined, name: string): number | undefined {
  const match = text === undefined ? null : new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return match === null ? undefined : Number(match[1]);
}

export function createMemoryLimit(name: string, limitMb: number): MemoryLimit {
  const bytes = String(limitMb * (1 << 20));
  const v1 = existsSync(join(V1, 'memory.limit_in_bytes'));
  const v2 = !v1 && (read(join(V2, 'cgroup.controllers')) ?? '').split(/\s+/).includes('memory');
  if (!v1 && !v2) throw new Error(`--svc-c-memory: this machine has no cgroup memory controller at ${V1} or ${V2}`);
  const dir = join(v1 ? V1 : V2, `svc-soak-${name}-${process.pid}`);
  try {
    mkdirSync(dir);
    if (v1) {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), bytes);
      // With swap, a process over its limit would be swapped out rather than stopped: count swap in.
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), bytes);
    } else {
      writeFileSync(join(dir, 'memory.max'), bytes);
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
    }
  } catch (err) {
    throw new Error(`--svc-c-memory: cannot make the cgroup ${dir} (run as root): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  return {
    limitMb,
    wrap: (argv) => ['/bin/sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, ...argv],
    peakMb() {
      const text = read(join(dir, v1 ? 'memory.max_usage_in_bytes' : 'memory.peak'));
      return text === undefined ? undefined : Number(text.trim()) / (1 << 20);
    },
    oomKills: () => counter(read(join(dir, v1 ? 'memory.oom_control' : 'memory.events')), 'oom_kill'),
    remove() {
      try {
        rmdirSync(dir);
      } catch {
        // a process of it still exiting: the kernel keeps the cgroup until it has
      }
    },
  };
}
