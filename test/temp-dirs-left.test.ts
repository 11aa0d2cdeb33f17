/** The harness's temp dir bookkeeping (helpers/temp-dir.ts) and its check (temp-dirs-left.ts). */
import { expect } from 'chai';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempConfigDir } from './helpers/manifests.js';
import { cleanUpTempDirs, makeTempDir, removeTempDir, tempDirsLeft } from './helpers/temp-dir.js';
import { mochaHooks } from './temp-dirs-left.js';

describe('test harness: temp dirs', () => {
  it('remembers a config dir with the test file that made it, until it is removed', () => {
    const dir = tempConfigDir({ 'svc-secret.yaml': 'stringData: {}\n' });
    try {
      expect(tempDirsLeft()).to.deep.include({ dir, madeBy: 'test/temp-dirs-left.test.ts' });
    } finally {
      removeTempDir(dir);
    }
    expect(tempDirsLeft().map((left) => left.dir)).not.to.include(dir);
  });

  it('fails the file that leaves a dir behind, naming the dir and its maker, and removes it', () => {
    const dir = makeTempDir('svc-config-');
    writeFileSync(join(dir, 'svc-secret.yaml'), 'stringData: {server.secretkey: k}\n');
    expect(() => mochaHooks.afterAll()).to.throw(`test harness: 1 temp dir(s) left behind, removed now; remove them in the test that makes them, also when it fails: ${dir} (made by test/temp-dirs-left.test.ts)`);
    expect(existsSync(dir)).to.equal(false);
    expect(() => mochaHooks.afterAll()).not.to.throw();
  });

  describe('cleanUpTempDirs()', () => {
    const made: string[] = [];
    let outer: string;
    before(() => {
      outer = makeTempDir('svc-config-');
    });
    after(() => removeTempDir(outer));

    describe('a describe that makes dirs in its hooks and tests, and fails', () => {
      cleanUpTempDirs();
      before(() => {
        made.push(makeTempDir('svc-config-'));
      });
      after(() => {
        // Its own after hooks still find the dirs (a server may still be writing there).
        for (const dir of made) expect(existsSync(dir), dir).to.equal(true);
      });

      it('makes one in a test and leaves it there, as a failing test would', () => {
        const dir = tempConfigDir({ 'nested/svc-cm.yaml': 'data: {}\n' });
        made.push(dir);
        mkdirSync(join(dir, 'more'));
        expect(() => {
          throw new Error('the test failed here');
        }).to.throw('the test failed here');
      });
    });

    // A suite's own tests run before its child suites: the check is the next describe.
    describe('the next describe', () => {
      it('finds them removed after that describe, and what was made before it still there', () => {
        expect(existsSync(outer)).to.equal(true);
        expect(made).to.have.length(2);
        for (const dir of made) expect(existsSync(dir), dir).to.equal(false);
        expect(tempDirsLeft().map((left) => left.dir)).to.not.include.members(made);
      });
    });
  });
});
