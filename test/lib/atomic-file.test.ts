import fs from 'node:fs/promises';
import { readFile, readdir } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { expect } from 'chai';
import { writeFileAtomic } from '../../src/lib/atomic-file.js';
import { tempDirEach } from '../helpers/temp-dir.js';

/**
 * Records every fsync, with what `target` held at that moment. fs/promises is patched
 * and the ESM bindings re-synced, because atomic-file.ts imports `open` by name.
 */
async function recordSyncs(target: string, run: () => Promise<void>): Promise<{ path: string; targetText: string | undefined }[]> {
  const synced: { path: string; targetText: string | undefined }[] = [];
  const realOpen = fs.open;
  const spy = async (...args: Parameters<typeof fs.open>): Promise<fs.FileHandle> => {
    const handle = await realOpen(...args);
    const realSync = handle.sync.bind(handle);
    handle.sync = async () => {
      synced.push({ path: String(args[0]), targetText: await readFile(target, 'utf8').catch(() => undefined) });
      return realSync();
    };
    return handle;
  };
  fs.open = spy as typeof fs.open;
  syncBuiltinESMExports();
  try {
    await run();
  } finally {
    fs.open = realOpen;
    syncBuiltinESMExports();
  }
  return synced;
}

describe('config/atomic-file', () => {
  let dir: string;
  tempDirEach('svc-atomic-file-', (made) => (dir = made));

  it('fsyncs the directory after the rename, so a power loss cannot bring the old file back', async () => {
    const target = path.join(dir, 's.yaml');
    await fs.writeFile(target, 'old\n');
    const synced = await recordSyncs(target, () => writeFileAtomic(target, 'new\n', { mode: 0o600 }));
    const last = synced.at(-1);
    expect(last?.path).to.equal(dir);
    // The directory is synced once the new name is in place, not before.
    expect(last?.targetText).to.equal('new\n');
    expect(await readdir(dir)).to.deep.equal(['s.yaml']);
  });
});
