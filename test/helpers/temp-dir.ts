/** A fresh directory under the system temp dir for every test of the calling describe(), removed after it. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export function tempDirEach(prefix: string, use: (dir: string) => void): void {
  let dir: string | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    use(dir);
  });
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
}
