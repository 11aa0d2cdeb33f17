/**
 * The soak in its CI-sized form: three minutes of the mixed load with every fault once, judged
 * on its invariants only (no timing: CI machines are shared). The hour-long run is by hand
 * (docs/reliability.md).
 */
import { execFile } from 'node:child_process';
import { expect } from 'chai';
import { ROOT } from '../helpers/run.js';

describe('bench/soak, three minutes under faults', function () {
  this.timeout(8 * 60_000);

  it('holds every invariant: created tokens kept and working, ended ones refused, no failure outside a fault, descriptors and Redis keys back', async function () {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'bench/soak/main.ts', '--duration', '180s'], { cwd: ROOT, maxBuffer: 32 << 20, timeout: 7 * 60_000 }, (err, out, errText) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout: out, stderr: errText });
      });
    });
    const invariants = stdout.split('\n').filter((line) => /^- (held|BROKEN): /.test(line));
    expect(invariants.length, `the soak printed no invariants:\n${stdout}\n${stderr.slice(-4000)}`).to.be.at.least(6);
    expect(invariants.filter((line) => line.startsWith('- BROKEN')), stdout).to.deep.equal([]);
    expect(code, stderr.slice(-4000)).to.equal(0);
  });
});
