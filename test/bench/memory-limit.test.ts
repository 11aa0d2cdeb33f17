/**
 * The soak's memory limit stands for a container's: a process over it must be stopped by the
 * kernel and the kill counted, and one under it left alone. Needs a cgroup memory controller that
 * this user may write (root, as the suite runs): elsewhere it is skipped, and says why.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createMemoryLimit, type MemoryLimit } from '../../bench/soak/memory-limit.js';

/** Touches `mb` MB of memory page by page (Buffer.alloc writes zeroes), then exits 0. */
const TOUCH = 'const mb = Number(process.argv[1]); const kept = []; for (let i = 0; i < mb; i++) kept.push(Buffer.alloc(1 << 20, 1)); process.exit(0);';

async function run(limit: MemoryLimit, mb: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const [command, ...args] = limit.wrap([process.execPath, '-e', TOUCH, String(mb)]);
  const child = spawn(command!, args, { stdio: 'ignore' });
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { code, signal };
}

describe('soak memory limit', function () {
  this.timeout(30_000);
  let limit: MemoryLimit | undefined;

  before(function () {
    try {
      limit = createMemoryLimit('test', 128);
    } catch (err) {
      process.stderr.write(`skipped: ${err instanceof Error ? err.message : String(err)}\n`);
      this.skip();
    }
  });
  after(() => limit?.remove());

  it('leaves a process under the limit alone', async () => {
    expect(await run(limit!, 16)).to.deep.equal({ code: 0, signal: null });
    expect(limit!.oomKills()).to.equal(0);
    expect(limit!.peakMb()).to.be.above(16).and.below(128);
  });

  it('has the kernel stop a process over the limit, and counts the kill', async () => {
    expect(await run(limit!, 400)).to.deep.equal({ code: null, signal: 'SIGKILL' });
    expect(limit!.oomKills()).to.equal(1);
  });
});
