/** The harness's check that a test's processes end with it (processes-left.ts, helpers/run.ts). */
import { expect } from 'chai';
import { runEntry } from './helpers/run.js';
import { mochaHooks } from './processes-left.js';

describe('test harness: processes a test leaves running', () => {
  it('kills a process runEntry started that is still running when the test ends, and names it without a URL\'s password', async () => {
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    const forever = runEntry('still-running', ['--redis', 'redis://:pw-in-url@127.0.0.1:1/0'], process.env, undefined, {}, ['-e', 'setInterval(() => undefined, 1_000)']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.stderr.write = ((chunk: string) => written.push(chunk) > 0) as typeof process.stderr.write;
    try {
      mochaHooks.afterEach();
    } finally {
      process.stderr.write = write;
    }
    expect((await forever).code).to.equal(null);
    expect(written).to.deep.equal(['test harness: killed a process the test left running: still-running --redis redis://…@127.0.0.1:1/0\n']);
  });

  it('leaves nothing to kill after a test that awaited its process', async () => {
    expect((await runEntry('ended', [], process.env, undefined, {}, ['-e', 'process.exit(3)'])).code).to.equal(3);
    let wrote = false;
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (() => (wrote = true)) as typeof process.stderr.write;
    try {
      mochaHooks.afterEach();
    } finally {
      process.stderr.write = write;
    }
    expect(wrote).to.equal(false);
  });
});
