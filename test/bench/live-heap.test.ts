/**
 * The soak judges the untouched process's live heap as a leak's sign, so the reading must count
 * what the process keeps and not the garbage it has yet to collect.
 */
import { expect } from 'chai';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { liveHeapMb } from '../../bench/soak/live-heap.js';
import { freePort } from '../helpers/peers.js';

/** About 20 MB of small objects on the JS heap: kept, or made and dropped at once (garbage). */
const CHILD = `
const make = () => Array.from({ length: 400_000 }, (_, i) => ({ i, name: 'x' + i }));
const kept = [];
let garbage;
process.stdin.on('data', (d) => {
  for (const cmd of String(d).trim().split('\\n')) {
    if (cmd === 'keep') kept.push(make());
    if (cmd === 'garbage') { garbage = make(); garbage = undefined; }
    process.stdout.write('done ' + cmd + '\\n');
  }
});
process.stdout.write('ready\\n');
`;

describe('soak live heap', function () {
  this.timeout(30_000);
  let child: ChildProcessWithoutNullStreams;
  let port: number;

  async function ask(cmd: string): Promise<void> {
    const answered = new Promise<void>((resolve) => {
      const onData = (d: Buffer): void => {
        if (String(d).includes(`done ${cmd}`)) {
          child.stdout.off('data', onData);
          resolve();
        }
      };
      child.stdout.on('data', onData);
    });
    child.stdin.write(`${cmd}\n`);
    await answered;
  }

  before(async () => {
    port = await freePort();
    child = spawn(process.execPath, [`--inspect=127.0.0.1:${port}`, '-e', CHILD]);
    const [first] = (await once(child.stdout, 'data')) as [Buffer];
    expect(String(first)).to.contain('ready');
  });
  after(async () => {
    child.kill();
    await once(child, 'exit');
  });

  it('counts what the process keeps, not the garbage it has yet to collect', async () => {
    const base = await liveHeapMb(port);
    expect(base).to.be.a('number');
    await ask('garbage');
    const afterGarbage = await liveHeapMb(port);
    expect(afterGarbage! - base!, 'garbage counted as live').to.be.below(3);
    await ask('keep');
    const afterKeep = await liveHeapMb(port);
    expect(afterKeep! - base!, 'what is kept not counted').to.be.above(10);
  });

  it('answers undefined, not a figure, when no inspector listens', async () => {
    expect(await liveHeapMb(await freePort())).to.equal(undefined);
  });
});
