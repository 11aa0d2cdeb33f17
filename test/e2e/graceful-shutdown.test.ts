/** SIGTERM lets a request in flight finish, then the process exits 0. */
import { expect } from 'chai';
import bcrypt from 'bcryptjs';
import { spawn } from 'node:child_process';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { ROOT, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('graceful shutdown', () => {
  cleanUpTempDirs();
  it('finishes an in-flight login (failed logins are slowed on purpose) after SIGTERM and exits 0', async () => {
    const dir = tempConfigDir({
      'cm.yaml': configMap('svc-cm', {}),
      'secret.yaml': secret('svc-secret', { 'server.secretkey': 'graceful-key', 'admin.password': bcrypt.hashSync('right-password', 4), 'admin.passwordMtime': new Date().toISOString() }),
    });
    const port = await freePort();
    const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--config', dir, '--listen', `127.0.0.1:${port}`], { cwd: ROOT, stdio: 'ignore', env: { ...process.env, SVC_REDIS_URL: '' } });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    for (let up = false; !up; ) {
      up = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
      if (!up) await new Promise((r) => setTimeout(r, 50));
    }
    const started = Date.now();
    const inFlight = fetch(`${base}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'wrong-password' }),
    });
    await new Promise((r) => setTimeout(r, 150));
    child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).to.equal(401);
    expect(((await res.json()) as { error: string }).error).to.equal('invalid_credentials');
    // The failure delay is at least 0.5 s, so the answer really came after the signal.
    expect(Date.now() - started).to.be.greaterThan(450);
    // The client keeps its connection alive; shutdown must not wait for the 10 s grace for it.
    const answered = Date.now();
    expect(await exited).to.equal(0);
    expect(Date.now() - answered).to.be.lessThan(5000);
    const after = await fetch(`${base}/healthz`).then(() => 'answered', () => 'refused');
    expect(after).to.equal('refused');
  });
});
