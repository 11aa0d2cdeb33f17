/** The composition root: what it reads once for every feature. */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { accountsConfigDir } from '../helpers/accounts-fixture.js';
import { startTestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('startServer', function () {
  cleanUpTempDirs();
  this.timeout(20_000);

  it('warns once about a bad login limit, however many features read the limits', async function () {
    const dir = accountsConfigDir();
    const server = await startTestServer(dir, { env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: 'five' } });
    try {
      const warnings = server.logs().split('\n').filter((line) => line.includes("SVC_SESSION_FAILURE_MAX_FAIL_COUNT='five' is not an integer >= 1; using 5"));
      expect(warnings).to.have.length(1);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
