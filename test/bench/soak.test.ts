/**
 * The soak in its CI-sized form: the mixed load with every fault once, back to back (each held
 * 5 s where its length is ours, each starting 5 s after the one before is over), between the
 * same warm-up and cool-down as the long runs, judged on every invariant (no timing: CI machines
 * are shared). A longer run adds steady load between the faults, which only the long runs'
 * memory slopes need, and they are judged from 30 minutes on. The hour-long run is by hand
 * (docs/reliability.md).
 */
import { execFile } from 'node:child_process';
import { expect } from 'chai';
import { FAULTS } from '../../bench/soak/faults.js';
import { ROOT } from '../helpers/run.js';

describe('bench/soak, every fault once', function () {
  this.timeout(8 * 60_000);

  it('injects every fault once and holds every invariant: created tokens kept and working, ended ones refused, no failure outside a fault, descriptors and Redis keys back', async function () {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'bench/soak/main.ts', '--duration', '60s'], { cwd: ROOT, maxBuffer: 32 << 20, timeout: 7 * 60_000 }, (err, out, errText) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout: out, stderr: errText });
      });
    });
    const invariants = stdout.split('\n').filter((line) => /^- (held|BROKEN): /.test(line));
    expect(invariants.length, `the soak printed no invariants:\n${stdout}\n${stderr.slice(-4000)}`).to.be.at.least(6);
    expect(invariants.filter((line) => line.startsWith('- BROKEN')), stdout).to.deep.equal([]);
    // Every fault was injected, once: its row in the report's table of faults, and what happened not a failure or a skip.
    const faults = (stdout.split('## Faults\n')[1] ?? '').split('\n## ')[0]!.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| fault '));
    expect(faults.map((row) => row.split('|')[1]!.trim()), stdout).to.deep.equal(FAULTS);
    expect(faults.filter((row) => / \| (the fault itself failed|skipped)/.test(row)), stdout).to.deep.equal([]);
    expect(code, stderr.slice(-4000)).to.equal(0);
  });
});
