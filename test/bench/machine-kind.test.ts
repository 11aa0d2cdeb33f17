import { expect } from 'chai';
import { cpuModel, machineKind, quotaCores } from '../../bench/machine-kind.js';

describe('bench machine kind', () => {
  const EPYC = 'processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2596.126\n\n'
    + 'processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2601.000\n';

  it("names the CPU by its model name, family, model and stepping, not its clock (which moves)", () => {
    expect(cpuModel(EPYC)).to.equal('AMD EPYC (family 25, model 17, stepping 1)');
    expect(cpuModel('processor\t: 0\nCPU part\t: 0xd0c\n')).to.equal('0xd0c');
    expect(cpuModel('')).to.equal('unknown CPU');
  });

  it("takes the cgroup's CPU quota, rounded up to whole cores, when there is one", () => {
    expect(quotaCores('max 100000\n')).to.equal(undefined);
    expect(quotaCores('150000 100000\n')).to.equal(2);
    expect(quotaCores('50000 100000')).to.equal(1);
    expect(quotaCores(undefined, '-1\n', '100000\n')).to.equal(undefined);
    expect(quotaCores(undefined, '400000\n', '100000\n')).to.equal(4);
    expect(quotaCores(undefined)).to.equal(undefined);
  });

  it('is one label of CPU, vCPUs (the lower of the cores and the quota) and memory rounded to GiB', () => {
    const here = machineKind({ cpuinfo: EPYC, parallelism: 2, quota: undefined, memoryBytes: 23.54 * 2 ** 30 });
    expect(here).to.deep.equal({ cpu: 'AMD EPYC (family 25, model 17, stepping 1)', vcpus: 2, memoryGiB: 24, label: 'AMD EPYC (family 25, model 17, stepping 1), 2 vCPUs, 24 GiB' });
    expect(machineKind({ cpuinfo: EPYC, parallelism: 8, quota: 1, memoryBytes: 2 ** 30 }).label).to.equal('AMD EPYC (family 25, model 17, stepping 1), 1 vCPU, 1 GiB');
    expect(machineKind({ cpuinfo: EPYC, parallelism: 2, quota: 4, memoryBytes: 8 * 2 ** 30 }).vcpus).to.equal(2);
  });
});
