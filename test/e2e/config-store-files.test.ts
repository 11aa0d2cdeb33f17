/**
 * "An editor of one store never defines another", end to end: svc-server as its own process on a
 * directory store (svc-cm.yaml, svc-rbac-cm.yaml and svc-secret.yaml, as the first start writes
 * them), and an editor of svc-cm.yaml who appends a second document `kind: Secret, name:
 * svc-secret` with a signing key and an admin password of their own.
 *
 * - With such a file, the server refuses to start, naming the file, the document and the store;
 *   `svc-server validate` reports the same problem and exits 1.
 * - Appended while the server runs: the forged admin password does not log in, the real one
 *   does, a session issued before still works (the forged signing key is not in force), and the
 *   log says why. Before the fix, svc-cm.yaml sorted first, so its copy of svc-secret won: the
 *   forged password logged in as admin and every earlier session was refused.
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { accountsConfigDir, call, login, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import { secret } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { entryArgs, ROOT, runEntry, SERVER_ENTRY } from '../helpers/run.js';
import { cleanRedisEnv, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const FORGED_PASSWORD = 'forged-admin-pass';

/** The second document an editor of svc-cm.yaml appends: svc-secret with keys of their own. */
function forgedSecret(): string {
  return `---\n${secret('svc-secret', {
    'server.secretkey': 'forged-secret-key-0123456789abcdef',
    'admin.password': bcrypt.hashSync(FORGED_PASSWORD, 4),
    'admin.passwordMtime': '2020-01-01T00:00:00.000Z',
  })}`;
}

/** The problem the loader reports for the forged document. */
function problem(dir: string): string {
  return `${join(dir, 'svc-cm.yaml')}: document 2 defines Secret svc-secret, which is read only from svc-secret.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`;
}

/** Runs svc-server until it exits, or until it serves /healthz (then stops it): the exit code and stderr, or 'served'. */
async function startOrExit(dir: string): Promise<{ code: number | null; stderr: string } | 'served'> {
  const port = await freePort();
  const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--config', dir, '--listen', `127.0.0.1:${port}`], { cwd: ROOT, env: cleanRedisEnv({}) });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (child.exitCode !== null) return { code: await exited, stderr };
    const status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0);
    if (status === 200) {
      child.kill('SIGTERM');
      await exited;
      return 'served';
    }
  }
  child.kill('SIGKILL');
  await exited;
  throw new Error(`svc-server neither exited nor served within 30 s: ${stderr}`);
}

describe('e2e: each store comes from its own file', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  it('refuses to start when svc-cm.yaml also defines svc-secret, naming the file, the document and the store', async () => {
    const dir = accountsConfigDir();
    appendFileSync(join(dir, 'svc-cm.yaml'), forgedSecret());
    const outcome = await startOrExit(dir);
    expect(outcome, 'the server started on a forged svc-secret').to.not.equal('served');
    expect(outcome).to.deep.equal({
      code: 1,
      stderr: `svc-server: ${dir}: a store is defined outside its own file, so this configuration is refused (docs/config-store.md): ${problem(dir)}\n`,
    });
  });

  it('validate reports it and exits 1', async () => {
    const dir = accountsConfigDir();
    appendFileSync(join(dir, 'svc-cm.yaml'), forgedSecret());
    const { code, stderr } = await runEntry(SERVER_ENTRY, ['validate', '--config', dir]);
    expect([code, stderr]).to.deep.equal([1, `${problem(dir)}\n1 problem found\n`]);
  });

  describe('a running server', () => {
    let dir: string;
    let svc: ServerProcess;

    before(async () => {
      dir = accountsConfigDir();
      svc = await startServerProcess(dir, 1, cleanRedisEnv({}));
    });
    after(async () => {
      await svc.stop();
    });

    it('keeps its last good svc-cm.yaml when an edit appends svc-secret to it: the forged password does not log in, the real one does, and the log says why', async () => {
      const before = await login(svc.url, 'admin', PASSWORDS.admin);
      appendFileSync(join(dir, 'svc-cm.yaml'), forgedSecret());
      // Any line about this edit: on the code before the fix, the real svc-secret.yaml was the one reported.
      await waitFor(() => /config rejected: [^\n]*svc-secret/.test(svc.logTail()), 'the edit is seen', 10_000);

      const forged = await call(svc.url, 'POST', '/api/v1/session', { body: { username: 'admin', password: FORGED_PASSWORD } });
      expect(forged.status, `the forged admin password logged in: ${JSON.stringify(forged.body)}`).to.equal(401);
      const real = await call(svc.url, 'POST', '/api/v1/session', { body: { username: 'admin', password: PASSWORDS.admin } });
      expect(real.status, JSON.stringify(real.body)).to.equal(200);
      // The signing key in force is still the real one: a session issued before the edit still works.
      expect((await call(svc.url, 'GET', '/api/v1/session/userinfo', { token: before })).body).to.include({ loggedIn: true, username: 'admin' });
      expect(svc.logTail()).to.include(`config rejected: ${problem(dir)}`);
      expect(svc.logTail()).to.include(`keeping the last good version of ${join(dir, 'svc-cm.yaml')}`);
    });
  });
});
