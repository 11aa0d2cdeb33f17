// mocha's own summary ("N passing") is not a line CI recognises: keep the spec output and end
// the run with the plain line `N passed, N failed, N skipped`. Before it, the slowest files:
// each file's wall time goes to .tmp/suite-times.json (file-times.ts says how each is timed).
const { mkdirSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');
const Mocha = require('mocha');
const { ROOT } = require('./helpers/run.ts');
const { TIMES_VARIABLE, bySlowest, parseTimeLines, slowestReport } = require('./file-times.ts');

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;
const TMP = join(ROOT, '.tmp');
const SLOWEST_SHOWN = 15;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const parallel = typeof runner.isParallelMode === 'function' && runner.isParallelMode();
    /** Serial mode: each file's top suites, timed from their events, which arrive as they happen. */
    const serial = new Map();
    const list = join(TMP, `suite-times-${process.pid}.jsonl`);
    if (parallel) {
      mkdirSync(TMP, { recursive: true });
      writeFileSync(list, '');
      // Read by file-times.ts in the workers, which inherit this process's environment.
      process.env[TIMES_VARIABLE] = list;
    } else {
      runner.on(EVENT_SUITE_BEGIN, (suite) => {
        if (suite.file !== undefined && suite.parent?.root) serial.set(suite, { file: suite.file, started: Date.now() });
      });
      runner.on(EVENT_SUITE_END, (suite) => {
        const timing = serial.get(suite);
        if (timing !== undefined) timing.ended = Date.now();
      });
    }
    runner.once(EVENT_RUN_END, () => {
      let times;
      if (parallel) {
        times = parseTimeLines(readFileSync(list, 'utf8'));
        rmSync(list, { force: true });
      } else {
        times = [...serial.values()].filter((t) => t.ended !== undefined).map((t) => ({ file: relative(ROOT, t.file), ms: t.ended - t.started }));
      }
      if (times.length > 0) {
        mkdirSync(TMP, { recursive: true });
        writeFileSync(join(TMP, 'suite-times.json'), `${JSON.stringify(bySlowest(times), null, 2)}\n`);
        process.stdout.write(`\n${slowestReport(times, SLOWEST_SHOWN)}\n`);
      }
      const s = runner.stats;
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
    });
  }
}
module.exports = SummaryReporter;
