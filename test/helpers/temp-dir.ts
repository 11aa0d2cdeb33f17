/**
 * Temp dirs of the tests. Config dirs hold signing keys, passwords and client secrets, so every
 * dir made here is remembered with the test file that made it, and the harness's root hook
 * (test/temp-dirs-left.ts) fails the file, or the run, that leaves one behind.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Dirs made in this process, with the test file that asked for each, in the order made. */
const made = new Map<string, { readonly madeBy: string; readonly seq: number }>();
let madeSoFar = 0;

const TEST_ROOT = fileURLToPath(new URL('../', import.meta.url));
const HELPERS = fileURLToPath(new URL('./', import.meta.url));

/** The first test file on the stack (not a helper), or the first helper, so a leak names where it came from. */
function callerFile(): string {
  const files = (new Error().stack ?? '')
    .split('\n')
    .map((line) => /(?:file:\/\/)?(\/[^\s:()]+\.ts):\d+/.exec(line)?.[1])
    .filter((file): file is string => file !== undefined && file.startsWith(TEST_ROOT) && !file.endsWith('/helpers/temp-dir.ts'));
  const file = files.find((f) => !f.startsWith(HELPERS)) ?? files[0];
  return file === undefined ? 'an unknown file' : path.relative(path.join(TEST_ROOT, '..'), file);
}

/** A fresh directory under the system temp dir, remembered until a check finds it removed. */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.set(dir, { madeBy: callerFile(), seq: madeSoFar++ });
  return dir;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}

/** Dirs made in this process that still exist, with the file that made each; forgets the removed ones. */
export function tempDirsLeft(): Array<{ readonly dir: string; readonly madeBy: string }> {
  const left: Array<{ dir: string; madeBy: string }> = [];
  for (const [dir, { madeBy }] of made) {
    if (existsSync(dir)) left.push({ dir, madeBy });
    else made.delete(dir);
  }
  return left;
}

/**
 * Removes, after the calling describe(), every dir made through this module while it ran: by its
 * hooks, its tests or the helpers they call, whether they passed or failed. Call it first in the
 * describe. Tests run one at a time in a process, so "made while it ran" is exactly the
 * describe's own dirs. The removal is added as the suite's last "after all" hook once the suite
 * starts, so the describe's own after hooks (stopping a server that still writes there) run first.
 */
export function cleanUpTempDirs(): void {
  before(function rememberWhereTempDirsStart(this: Mocha.Context) {
    const from = madeSoFar;
    const suite = this.test?.parent;
    if (suite === undefined) throw new Error('cleanUpTempDirs() must be called inside a describe()');
    suite.afterAll('remove the temp dirs made here', () => {
      for (const [dir, { seq }] of made) if (seq >= from) removeTempDir(dir);
    });
  });
}

/** A fresh directory for every test of the calling describe(), removed after it. */
export function tempDirEach(prefix: string, use: (dir: string) => void): void {
  let dir: string | undefined;
  beforeEach(() => {
    dir = makeTempDir(prefix);
    use(dir);
  });
  afterEach(() => {
    if (dir !== undefined) removeTempDir(dir);
    dir = undefined;
  });
}
