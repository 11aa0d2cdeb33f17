/**
 * Mocha root hook plugin (.mocharc.json `require`): no process a test started through
 * helpers/run.ts's runEntry outlives the test. A test that times out is failed but not stopped, so
 * its process would otherwise go on after the file's after hooks removed its peers and its
 * config dir. Killing it fails nothing (a failing root hook would skip the file's other tests):
 * the timed-out test has failed already, and the line says what was killed.
 */
import { killRunEntryProcesses } from './helpers/run.js';

export const mochaHooks = {
  afterEach(): void {
    for (const command of killRunEntryProcesses()) process.stderr.write(`test harness: killed a process the test left running: ${command}\n`);
  },
};
