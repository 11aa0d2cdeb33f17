/**
 * The kind of machine a bench ran on: CPU model, the vCPUs this process may use and the memory,
 * rounded. bench/published.json holds figures per kind, and bench:check judges a run only
 * against figures published for its own kind (./check-verdict.ts): the same build gave SSO
 * logins 4.8-7.7 x LemonLDAP::NG and refresh grants 0.47-0.70 x oidc-provider alone on two
 * 2-core hosts, so a figure from one kind is no gate on another.
 *
 * The reading of /proc and the cgroup is apart from the parsing, which the tests drive.
 */
import { readFile } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';

export interface MachineKind {
  /** /proc/cpuinfo's model name, with family, model and stepping: a virtual host often names only the vendor's line ("AMD EPYC"). */
  readonly cpu: string;
  /** Cores this process may use: os.availableParallelism(), lowered by the cgroup's CPU quota when it has one. */
  readonly vcpus: number;
  /** Memory in GiB, rounded to the nearest: the kernel keeps a few hundred MiB of a round figure for itself. */
  readonly memoryGiB: number;
  /** The three in one line, as bench/published.json's `kind` spells it. */
  readonly label: string;
}

/** The first processor's fields of /proc/cpuinfo that name its model. */
export function cpuModel(cpuinfo: string): string {
  const first = cpuinfo.split(/\n\s*\n/)[0] ?? '';
  const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(first)?.[1]?.trim();
  const name = field('model name') ?? field('Model') ?? field('CPU part') ?? 'unknown CPU';
  const detail = [['family', field('cpu family')], ['model', field('model')], ['stepping', field('stepping')]]
    .filter((part): part is [string, string] => part[1] !== undefined && part[1] !== '')
    .map(([label, value]) => `${label} ${value}`);
  return detail.length === 0 ? name : `${name} (${detail.join(', ')})`;
}

/**
 * The cgroup's CPU quota in cores, rounded up: cgroup v2's cpu.max ("max 100000" or
 * "200000 100000"), else v1's cfs_quota_us and cfs_period_us; undefined without a quota.
 */
export function quotaCores(cpuMax: string | undefined, v1Quota?: string, v1Period?: string): number | undefined {
  const [quota, period] = cpuMax !== undefined ? cpuMax.trim().split(/\s+/) : [v1Quota?.trim(), v1Period?.trim()];
  const q = Number(quota);
  const p = Number(period);
  if (quota === undefined || quota === 'max' || !(q > 0) || !(p > 0)) return undefined;
  return Math.max(1, Math.ceil(q / p));
}

export function machineKind(input: { cpuinfo: string; parallelism: number; quota: number | undefined; memoryBytes: number }): MachineKind {
  const cpu = cpuModel(input.cpuinfo);
  const vcpus = Math.max(1, Math.min(input.parallelism, input.quota ?? Number.POSITIVE_INFINITY));
  const memoryGiB = Math.max(1, Math.round(input.memoryBytes / 2 ** 30));
  return { cpu, vcpus, memoryGiB, label: `${cpu}, ${vcpus} vCPU${vcpus === 1 ? '' : 's'}, ${memoryGiB} GiB` };
}

const readOptional = (path: string) => readFile(path, 'utf8').catch(() => undefined);

/** This machine's kind. */
export async function readMachineKind(): Promise<MachineKind> {
  const [cpuinfo, cpuMax, v1Quota, v1Period] = await Promise.all([
    readOptional('/proc/cpuinfo'), readOptional('/sys/fs/cgroup/cpu.max'),
    readOptional('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'), readOptional('/sys/fs/cgroup/cpu/cpu.cfs_period_us'),
  ]);
  return machineKind({ cpuinfo: cpuinfo ?? '', parallelism: availableParallelism(), quota: quotaCores(cpuMax, v1Quota, v1Period), memoryBytes: totalmem() });
}
