import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { restoreSecretFile, updateSecretOnDisk } from '../../src/config/secret-writer.js';
import { Unavailable } from '../../src/errors.js';
import { STATUS } from '../../src/http/errors.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const SECRET = 'apiVersion: v1\nkind: Secret\nmetadata: { name: svc-secret }\nstringData:\n  server.secretkey: abc\n';

describe('config/secret-writer', () => {
  let root: string;
  tempDirEach('svc-secret-writer-', (made) => (root = made));

  it('writes a symlinked Secret file where it really is, keeping the link', async () => {
    const store = path.join(root, 'cfg');
    const real = path.join(root, 'real', 'secret.yaml');
    await mkdir(path.dirname(real), { recursive: true });
    await mkdir(store);
    await writeFile(real, SECRET);
    await symlink(real, path.join(store, 'svc-secret.yaml'));

    const result = await updateSecretOnDisk({ dir: store, name: 'svc-secret', mutate: () => ({ set: { 'accounts.alice.password': 'hash' } }) });

    expect(result).to.deep.include({ file: path.join(store, 'svc-secret.yaml'), created: false });
    expect(result.change?.target, 'written').to.equal(real);
    expect((await lstat(path.join(store, 'svc-secret.yaml'))).isSymbolicLink()).to.equal(true);
    expect(await readlink(path.join(store, 'svc-secret.yaml'))).to.equal(real);
    expect(await readFile(real, 'utf8')).to.equal(`${SECRET}data:\n  accounts.alice.password: ${Buffer.from('hash').toString('base64')}\n`);
  });

  it('answers a lock another writer holds past the timeout with a 503 saying so, and writes nothing', async () => {
    const file = path.join(root, 'svc-secret.yaml');
    await writeFile(file, SECRET);
    await writeFile(`${file}.lock`, '4242 busy-writer\n'); // fresh: not stale, so it is waited for
    let error: unknown;
    await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { a: '1' } }), lock: { timeoutMs: 100 } }).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(Unavailable);
    expect(STATUS[(error as Unavailable).code]).to.equal(503);
    expect((error as Error).message).to.equal(`timed out after 100 ms waiting for the lock file ${file}.lock, which another writer holds; try again`);
    expect(await readFile(file, 'utf8')).to.equal(SECRET);
  });

  it('reads no FIFO: a stray one is passed over, a Secret file that is one is a 503 naming it', async () => {
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    await symlink(path.join(root, 'pipe'), path.join(root, 'a-stray.yaml'));
    await writeFile(path.join(root, 'secrets.yaml'), SECRET);
    // Without a hint the writer looks through every file, the FIFO first (path order).
    const written = await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { a: '1' } }) });
    expect(written.file).to.equal(path.join(root, 'secrets.yaml'));

    await symlink(path.join(root, 'pipe'), path.join(root, 'svc-other.yaml'));
    let error: unknown;
    await updateSecretOnDisk({ dir: root, name: 'svc-other', mutate: () => ({ set: { a: '1' } }) }).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(Unavailable);
    expect((error as Error).message).to.equal(`cannot update Secret svc-other: ${path.join(root, 'pipe')} is not a regular file (a FIFO); it is not read`);
  });

  it('undoes a write by putting back the bytes it replaced, keeping the mode, and only if nothing wrote since', async () => {
    const file = path.join(root, 'svc-secret.yaml');
    await writeFile(file, SECRET, { mode: 0o640 });
    const first = await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { a: '1' } }) });
    expect(await restoreSecretFile(first.change!)).to.equal('restored');
    expect(await readFile(file, 'utf8')).to.equal(SECRET);
    // The write made it owner-only; putting the bytes back keeps the mode the file has now.
    expect((await stat(file)).mode & 0o777).to.equal(0o600);

    const second = await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { a: '2' } }) });
    await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { b: '3' } }) });
    const later = await readFile(file, 'utf8');
    expect(await restoreSecretFile(second.change!)).to.equal('changed-since');
    expect(await readFile(file, 'utf8')).to.equal(later);

    const created = await updateSecretOnDisk({ dir: root, name: 'svc-new', mutate: () => ({ set: { k: 'v' } }) });
    expect(await restoreSecretFile(created.change!)).to.equal('restored');
    expect((await readdir(root)).sort()).to.deep.equal(['svc-secret.yaml']);
  });

  it('makes a Secret file that others could read owner-only when it writes to it, and says so', async () => {
    const warnings: [object, string][] = [];
    const log = { warn: (fields: object, message: string) => void warnings.push([fields, message]) };
    const file = path.join(root, 'svc-secret.yaml');
    await writeFile(file, SECRET);
    await chmod(file, 0o644);
    const written = await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { 'idp.signing.key': 'private' } }), log });
    expect((await stat(file)).mode & 0o777).to.equal(0o600);
    expect(written.tightenedFrom).to.equal(0o644);
    expect(warnings).to.deep.equal([[
      { file, secret: 'svc-secret', from: '0644', to: '0600' },
      `Secret svc-secret: ${file} was readable or writable by others (mode 0644); svc wrote secret material to it and made it 0600`,
    ]]);

    // Owner-only already: kept as it is (0400 too), and nothing said.
    await chmod(file, 0o400);
    const again = await updateSecretOnDisk({ dir: root, name: 'svc-secret', mutate: () => ({ set: { b: '2' } }), log });
    expect((await stat(file)).mode & 0o777).to.equal(0o400);
    expect(again.tightenedFrom).to.equal(undefined);
    expect(warnings).to.have.length(1);

    // A Secret added to a file of other objects makes that file owner-only too; a new file is 0600.
    const shared = path.join(root, 'svc-more.yaml');
    await writeFile(shared, 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: svc-more }\n');
    await chmod(shared, 0o664);
    await updateSecretOnDisk({ dir: root, name: 'svc-more', mutate: () => ({ set: { k: 'v' } }), log });
    expect((await stat(shared)).mode & 0o777).to.equal(0o600);
    await updateSecretOnDisk({ dir: root, name: 'svc-new', mutate: () => ({ set: { k: 'v' } }), log });
    expect((await stat(path.join(root, 'svc-new.yaml'))).mode & 0o777).to.equal(0o600);
  });
});

