/** The suite's per-file wall times (file-times.ts, read by summary-reporter.cjs). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Context } from 'mocha';
import { bySlowest, fileTimer, parseTimeLines, slowestReport, timeLine, TIMES_VARIABLE } from './file-times.js';
import { cleanUpTempDirs, makeTempDir } from './helpers/temp-dir.js';
import { ROOT } from './helpers/run.js';

/** What a root hook's `this` holds when the root suite has these files' suites. */
function rootContext(files: readonly string[]): Context {
  return { test: { parent: { suites: files.map((file) => ({ file })) } } } as unknown as Context;
}

describe('test harness: each file\'s wall time', () => {
  cleanUpTempDirs();

  it('reads the lines the workers appended, leaving out one cut short', () => {
    const text = timeLine(join(ROOT, 'test/e2e/a.test.ts'), 1_500) + timeLine(join(ROOT, 'test/b.test.ts'), 20) + '{"file":"test/c.te';
    expect(parseTimeLines(text)).to.deep.equal([{ file: 'test/e2e/a.test.ts', ms: 1_500 }, { file: 'test/b.test.ts', ms: 20 }]);
  });

  it('sorts the files slowest first and adds up the runs of a file run twice', () => {
    expect(bySlowest([{ file: 'a', ms: 5 }, { file: 'b', ms: 30 }, { file: 'a', ms: 40 }, { file: 'c', ms: 45 }])).to.deep.equal([
      { file: 'a', ms: 45 },
      { file: 'c', ms: 45 },
      { file: 'b', ms: 30 },
    ]);
  });

  it('prints only the slowest files asked for, each with its seconds and its share of the sum', () => {
    const report = slowestReport([{ file: 'test/u.test.ts', ms: 250 }, { file: 'test/e2e/s.test.ts', ms: 61_250 }, { file: 'test/v.test.ts', ms: 12_500 }, { file: 'test/w.test.ts', ms: 1_000 }], 2);
    expect(report.split('\n')).to.deep.equal([
      'The 2 slowest of 4 files (75.0 s summed over the files):',
      '  61.3 s   82 %  test/e2e/s.test.ts',
      '  12.5 s   17 %  test/v.test.ts',
    ]);
  });

  describe('the root hooks', () => {
    const saved = process.env[TIMES_VARIABLE];
    after(() => {
      if (saved === undefined) delete process.env[TIMES_VARIABLE];
      else process.env[TIMES_VARIABLE] = saved;
    });

    it('append one line for a run of one file (a worker\'s), timed from the root before all to the root after all', async () => {
      const list = join(makeTempDir('file-times-'), 'times.jsonl');
      process.env[TIMES_VARIABLE] = list;
      const timer = fileTimer();
      timer.beforeAll();
      await new Promise((resolve) => setTimeout(resolve, 60));
      timer.afterAll.call(rootContext([join(ROOT, 'test/e2e/x.test.ts'), join(ROOT, 'test/e2e/x.test.ts')]));
      const [time, ...more] = parseTimeLines(readFileSync(list, 'utf8'));
      expect(more).to.deep.equal([]);
      expect(time?.file).to.equal('test/e2e/x.test.ts');
      expect(time?.ms).to.be.within(55, 5_000);
    });

    it('append nothing for a run of several files (serial mode, where the reporter times each file) or with no list named', () => {
      const list = join(makeTempDir('file-times-'), 'times.jsonl');
      process.env[TIMES_VARIABLE] = list;
      const timer = fileTimer();
      timer.beforeAll();
      timer.afterAll.call(rootContext([join(ROOT, 'test/a.test.ts'), join(ROOT, 'test/b.test.ts')]));
      delete process.env[TIMES_VARIABLE];
      timer.afterAll.call(rootContext([join(ROOT, 'test/a.test.ts')]));
      expect(() => readFileSync(list, 'utf8')).to.throw(/ENOENT/);
    });
  });
});
