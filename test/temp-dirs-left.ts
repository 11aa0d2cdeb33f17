/**
 * Mocha root hook plugin (.mocharc.json `require`): a test file may not leave a temp dir made by
 * test/helpers/temp-dir.ts (config dirs hold keys, passwords and client secrets). In parallel
 * mode root hooks run around each file, in the worker that runs it, so the failing "after all"
 * hook is that file's; run serially they run once around the whole run, and the message names
 * the file that made each dir. The dirs are removed either way, so a failed run leaves none,
 * and once more when the process exits: a test that timed out goes on running, and may make
 * one after its file's check.
 */
import { removeTempDir, tempDirsLeft } from './helpers/temp-dir.js';

process.on('exit', () => {
  for (const { dir } of tempDirsLeft()) removeTempDir(dir);
});

export const mochaHooks = {
  afterAll(): void {
    const left = tempDirsLeft();
    for (const { dir } of left) removeTempDir(dir);
    if (left.length === 0) return;
    const list = left.map(({ dir, madeBy }) => `${dir} (made by ${madeBy})`).join(', ');
    throw new Error(`test harness: ${String(left.length)} temp dir(s) left behind, removed now; remove them in the test that makes them, also when it fails: ${list}`);
  },
};
