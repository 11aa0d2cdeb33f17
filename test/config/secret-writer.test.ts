import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { updateSecretOnDisk } from '../../src/config/secret-writer.js';

const SECRET = 'apiVersion: v1\nkind: Secret\nmetadata: { name: svc-secret }\nstringData:\n  server.secretkey: abc\n';

describe('config/secret-writer', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'svc-secret-writer-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('writes a symlinked Secret file where it really is, keeping the link', async () => {
    const store = path.join(root, 'cfg');
    const real = path.join(root, 'real', 'secret.yaml');
    await mkdir(path.dirname(real), { recursive: true });
    await mkdir(store);
    await writeFile(real, SECRET);
    await symlink(real, path.join(store, 'svc-secret.yaml'));

    const result = await updateSecretOnDisk({ dir: store, name: 'svc-secret', mutate: () => ({ set: { 'accounts.alice.password': 'hash' } }) });

    expect(result).to.deep.equal({ file: path.join(store, 'svc-secret.yaml'), created: false, changed: true });
    expect((await lstat(path.join(store, 'svc-secret.yaml'))).isSymbolicLink()).to.equal(true);
    expect(await readlink(path.join(store, 'svc-secret.yaml'))).to.equal(real);
    expect(await readFile(real, 'utf8')).to.equal(`${SECRET}data:\n  accounts.alice.password: ${Buffer.from('hash').toString('base64')}\n`);
  });
});
