/** The default worker count from the container's CPU limit, on cgroup files a test writes. */
import { expect } from 'chai';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupCpuLimit, defaultWorkerCount } from '../../src/main/cpu-limit.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function cgroup(files: Record<string, string>): string {
  const root = makeTempDir('svc-cgroup-');
  made.push(root);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return root;
}

describe('cpu limit', () => {
  cleanUpTempDirs();
  it('reads cgroup v2 cpu.max: a quota of 2 CPUs gives 2 workers on a 16-CPU node', () => {
    const root = cgroup({ 'cpu.max': '200000 100000\n' });
    expect(cgroupCpuLimit(root)).to.equal(2);
    expect(defaultWorkerCount({ cgroupRoot: root, parallelism: 16 })).to.equal(2);
  });

  it('rounds a fraction down, with at least one worker', () => {
    expect(cgroupCpuLimit(cgroup({ 'cpu.max': '150000 100000' }))).to.equal(1);
    expect(cgroupCpuLimit(cgroup({ 'cpu.max': '50000 100000' }))).to.equal(1);
    expect(cgroupCpuLimit(cgroup({ 'cpu.max': '350000 100000' }))).to.equal(3);
  });

  it('takes "max" as no limit: the CPUs the process may use decide', () => {
    const root = cgroup({ 'cpu.max': 'max 100000' });
    expect(cgroupCpuLimit(root)).to.equal(undefined);
    expect(defaultWorkerCount({ cgroupRoot: root, parallelism: 4 })).to.equal(4);
  });

  it('never starts more workers than the CPUs the process may use', () => {
    expect(defaultWorkerCount({ cgroupRoot: cgroup({ 'cpu.max': '800000 100000' }), parallelism: 2 })).to.equal(2);
  });

  it('reads cgroup v1 cfs_quota_us over cfs_period_us, and -1 as no limit', () => {
    expect(cgroupCpuLimit(cgroup({ 'cpu/cpu.cfs_quota_us': '300000', 'cpu/cpu.cfs_period_us': '100000' }))).to.equal(3);
    expect(cgroupCpuLimit(cgroup({ 'cpu,cpuacct/cpu.cfs_quota_us': '100000', 'cpu,cpuacct/cpu.cfs_period_us': '100000' }))).to.equal(1);
    expect(cgroupCpuLimit(cgroup({ 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' }))).to.equal(undefined);
  });

  it('takes an unreadable or garbled file as no limit known', () => {
    expect(cgroupCpuLimit(cgroup({}))).to.equal(undefined);
    expect(cgroupCpuLimit(cgroup({ 'cpu.max': 'two CPUs' }))).to.equal(undefined);
    expect(defaultWorkerCount({ cgroupRoot: cgroup({ 'cpu.max': '' }), parallelism: 3 })).to.equal(3);
  });
});
