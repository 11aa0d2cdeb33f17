/** A bad environment value on a server with two workers: warned once by the primary, not once per worker. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { accountsConfigDir } from '../helpers/accounts-fixture.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { ROOT, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('e2e: environment warnings with two workers', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let redis: RedisPeer;
  let dir: string;
  before(async () => {
    redis = await startRedis();
    dir = accountsConfigDir();
  });
  after(async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('warns once about SVC_SESSION_FAILURE_MAX_FAIL_COUNT=five', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--workers', '2', '--redis', redis.url, '--config', dir, '--listen', `127.0.0.1:${port}`], {
      cwd: ROOT,
      env: { ...process.env, SVC_REDIS_URL: '', SVC_SESSION_FAILURE_MAX_FAIL_COUNT: 'five' },
    });
    let logs = '';
    child.stdout.on('data', (d: Buffer) => (logs += d.toString()));
    child.stderr.on('data', (d: Buffer) => (logs += d.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      for (const deadline = Date.now() + 60_000; (logs.match(/"worker ready"/g) ?? []).length < 2; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the two workers did not start:\n${logs}`);
      }
      const warnings = logs.split('\n').filter((line) => line.includes("SVC_SESSION_FAILURE_MAX_FAIL_COUNT='five' is not an integer >= 1; using 5"));
      expect(warnings, logs).to.have.length(1);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
