import { expect } from 'chai';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { withFileLock } from '../../src/lib/file-lock.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

describe('config/file-lock', () => {
  cleanUpTempDirs();
  /** Runs `writers` lock holders at once on `target`; returns the most that held it together. */
  async function mostHoldersAtOnce(target: string, writers: number): Promise<number> {
    let holders = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: writers }, () =>
        withFileLock(target, async () => {
          most = Math.max(most, ++holders);
          await sleep(2);
          holders--;
        }),
      ),
    );
    return most;
  }

  it('lets one writer in at a time', async () => {
    const target = join(makeTempDir('svc-lock-'), 'store');
    expect(await mostHoldersAtOnce(target, 20)).to.equal(1);
  });

  it('breaks a crashed holder\'s lock once, never the fresh lock of the waiter that broke it', async () => {
    for (let round = 0; round < 20; round++) {
      const target = join(makeTempDir('svc-lock-'), 'store');
      // A holder that crashed a minute ago.
      writeFileSync(`${target}.lock`, '12345 dead 2026-01-01T00:00:00Z\n');
      const old = new Date(Date.now() - 60_000);
      utimesSync(`${target}.lock`, old, old);
      expect(await mostHoldersAtOnce(target, 8), `round ${round}`).to.equal(1);
    }
  });
});
