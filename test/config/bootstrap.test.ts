import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import { ensureInitialConfig } from '../../src/config/bootstrap.js';
import { openDirStore } from '../../src/config/dir-store.js';
import type { StoreSnapshot } from '../../src/config/manifests.js';
import { StoresOutsideTheirFiles } from '../../src/config/store-files.js';
import { configMap, secret } from '../helpers/manifests.js';
import { ROOT, runEntry, UNPRIVILEGED } from '../helpers/run.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const NOW = new Date('2025-03-01T12:00:00.000Z');

function captureLog(): { log: Logger; text: () => string } {
  let buffer = '';
  const log = pino({ level: 'debug' }, { write: (line: string) => void (buffer += line) });
  return { log, text: () => buffer };
}

/** Counts up from a seed, so every generated value is known and distinct. */
function fakeRandom(): (size: number) => Buffer {
  let next = 1;
  return (size) => Buffer.from(Array.from({ length: size }, () => next++ % 256));
}

async function load(dir: string): Promise<StoreSnapshot> {
  const store = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
  await store.close();
  return store.current();
}

const EXISTING_SECRET = `# operator-managed; keep layout
apiVersion: v1
kind: Secret
metadata:
  name: svc-secret   # the settings secret
type: Opaque
data:
  accounts.alice.password: YWxpY2U=
`;

describe('config/bootstrap', () => {
  let root: string;
  tempDirEach('svc-bootstrap-', (made) => (root = made));

  it('creates the three objects and the initial admin secret in a missing directory', async () => {
    const dir = path.join(root, 'config', 'nested');
    const { log, text } = captureLog();
    const random = fakeRandom();
    const result = await ensureInitialConfig({ dir, log, randomBytes: random, now: () => NOW });

    const files = ['svc-cm.yaml', 'svc-rbac-cm.yaml', 'svc-secret.yaml', 'svc-initial-admin-secret.yaml'].map((f) => path.join(dir, f));
    expect(result).to.deep.equal({ createdFiles: files, addedKeys: [], initialAdminSecretFile: files[3] });
    expect((await readdir(dir)).sort()).to.deep.equal(files.map((f) => path.basename(f)).sort());
    for (const file of files.slice(2)) expect((await stat(file)).mode & 0o777, file).to.equal(0o600);

    const snapshot = await load(dir);
    expect(snapshot.configMaps.get('svc-cm')?.data).to.deep.equal({ url: 'http://127.0.0.1:8080' });
    expect(snapshot.configMaps.get('svc-rbac-cm')?.data).to.deep.equal({ 'policy.default': 'role:readonly', 'policy.csv': '' });
    const secret = snapshot.secrets.get('svc-secret');
    const password = snapshot.secrets.get('svc-initial-admin-secret')?.data['password'] ?? '';
    expect(secret?.labels).to.deep.equal({ 'app.kubernetes.io/part-of': 'svc' });
    expect(snapshot.secrets.get('svc-initial-admin-secret')?.labels).to.deep.equal({ 'app.kubernetes.io/part-of': 'svc' });
    expect(password).to.have.length.of.at.least(16);
    expect(secret?.data['server.secretkey']).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(bcrypt.compareSync(password, secret?.data['admin.password'] ?? '')).to.equal(true);
    expect(bcrypt.getRounds(secret?.data['admin.password'] ?? '')).to.equal(10);
    expect(secret?.data['admin.passwordMtime']).to.equal(NOW.toISOString());

    expect(text()).to.include(`initial admin password written to ${files[3]} (secret svc-initial-admin-secret, key password)`);
    expect(text()).not.to.include(password);
    expect(text()).not.to.include(Buffer.from(password).toString('base64'));
  });

  it('documents the settings with commented examples', async () => {
    await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) });
    const cm = await readFile(path.join(root, 'svc-cm.yaml'), 'utf8');
    expect(cm).to.include('# accounts.alice: apiKey, login').and.include('# extension.config: |');
    expect(await readFile(path.join(root, 'svc-rbac-cm.yaml'), 'utf8')).to.include('#   p, role:');
  });

  it('does nothing on a second run, or on a complete store', async () => {
    await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) });
    const before = await readFile(path.join(root, 'svc-secret.yaml'), 'utf8');
    const { log, text } = captureLog();
    expect(await ensureInitialConfig({ dir: root, log })).to.deep.equal({ createdFiles: [], addedKeys: [] });
    expect(await readFile(path.join(root, 'svc-secret.yaml'), 'utf8')).to.equal(before);
    expect(text()).not.to.include('initial admin password');
  });

  it('adds only the missing generated keys to an existing svc-secret, keeping its layout', async () => {
    const cmText = 'kind: ConfigMap\nmetadata: {name: svc-cm}\ndata: {url: "https://svc.example"}\n';
    await writeFile(path.join(root, 'cm.yaml'), cmText);
    await writeFile(path.join(root, 'secret.yaml'), EXISTING_SECRET, { mode: 0o640 });
    const { log, text } = captureLog();
    const result = await ensureInitialConfig({ dir: root, log, randomBytes: fakeRandom(), now: () => NOW });

    const adminFile = path.join(root, 'svc-initial-admin-secret.yaml');
    expect(result).to.deep.equal({
      createdFiles: [adminFile],
      addedKeys: ['svc-secret/server.secretkey', 'svc-secret/admin.password', 'svc-secret/admin.passwordMtime'],
      initialAdminSecretFile: adminFile,
    });
    const after = await readFile(path.join(root, 'secret.yaml'), 'utf8');
    expect(after.startsWith(EXISTING_SECRET)).to.equal(true);
    expect(after.slice(EXISTING_SECRET.length).split('\n').map((l) => l.split(':')[0])).to.deep.equal([
      '  server.secretkey', '  admin.password', '  admin.passwordMtime', '',
    ]);
    // Secret material went in: the file others could read is now owner-only, and the log says so.
    expect((await stat(path.join(root, 'secret.yaml'))).mode & 0o777).to.equal(0o600);
    expect(text()).to.include(`Secret svc-secret: ${path.join(root, 'secret.yaml')} was readable or writable by others (mode 0640); svc wrote secret material to it and made it 0600`);
    expect(await readFile(path.join(root, 'cm.yaml'), 'utf8')).to.equal(cmText);
    expect(await readdir(root)).not.to.include('svc-rbac-cm.yaml');
    expect(text()).to.include('ConfigMap svc-rbac-cm not found');

    const snapshot = await load(root);
    const password = snapshot.secrets.get('svc-initial-admin-secret')?.data['password'] ?? '';
    expect(snapshot.secrets.get('svc-secret')?.data['accounts.alice.password']).to.equal('alice');
    expect(bcrypt.compareSync(password, snapshot.secrets.get('svc-secret')?.data['admin.password'] ?? '')).to.equal(true);
    expect(text()).not.to.include(password);
  });

  it('creates svc-secret in its own file when only the ConfigMaps exist', async () => {
    await writeFile(path.join(root, 'cms.yaml'), 'kind: ConfigMap\nmetadata: {name: svc-rbac-cm}\n');
    const result = await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) });
    expect(result.createdFiles).to.deep.equal([path.join(root, 'svc-secret.yaml'), path.join(root, 'svc-initial-admin-secret.yaml')]);
    const secret = (await load(root)).secrets.get('svc-secret');
    expect(Object.keys(secret?.data ?? {}).sort()).to.deep.equal(['admin.password', 'admin.passwordMtime', 'server.secretkey']);
  });

  it('writes nothing when a store is defined outside its own file, and refuses the start naming it', async () => {
    // svc-rbac-cm appended to svc-cm.yaml; no svc-secret yet: a first start would otherwise complete the store.
    await writeFile(path.join(root, 'svc-cm.yaml'), `${configMap('svc-cm', {})}---\n${configMap('svc-rbac-cm', { 'policy.csv': 'g, carol, role:admin' })}`);
    let error: unknown;
    await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) }).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(StoresOutsideTheirFiles);
    expect((error as Error).message).to.include(`${path.join(root, 'svc-cm.yaml')}: document 2 defines ConfigMap svc-rbac-cm, which is read only from svc-rbac-cm.yaml`);
    expect(await readdir(root)).to.deep.equal(['svc-cm.yaml']);
  });

  it('refuses to replace a file of the same name that it did not recognise', async () => {
    const other = 'kind: ConfigMap\nmetadata: {name: not-svc}\n';
    await writeFile(path.join(root, 'svc-cm.yaml'), other);
    let error: unknown;
    await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) }).catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal(`cannot create the initial configuration: ${path.join(root, 'svc-cm.yaml')} already exists`);
    expect(await readFile(path.join(root, 'svc-cm.yaml'), 'utf8')).to.equal(other);
  });

  describe('when svc-secret is on disk but cannot be loaded', () => {
    const ADMIN_SECRET = secret('svc-initial-admin-secret', { password: 'the-only-copy' });
    const HASHED = `kind: Secret\nmetadata: {name: svc-secret}\nstringData:\n  server.secretkey: abcdefabcdefabcdefabcdef\n  admin.password: $2b$10$hash\n`;
    const cases = {
      'rejected (a key with no value)': { text: `${HASHED}  webhook.token:\n`, problem: 'Secret/svc-secret.stringData: webhook.token: must be a string' },
      'YAML that does not parse': { text: `${HASHED}  webhook.token: [\n`, problem: 'YAML does not parse at line' },
    };
    for (const [what, { text: secretText, problem }] of Object.entries(cases)) {
      for (const withConfigMaps of [true, false]) {
        it(`${what}, ${withConfigMaps ? 'with' : 'without'} the ConfigMaps: leaves the initial admin secret and svc-secret alone, and says why`, async () => {
          if (withConfigMaps) {
            await writeFile(path.join(root, 'svc-cm.yaml'), configMap('svc-cm', {}));
            await writeFile(path.join(root, 'svc-rbac-cm.yaml'), configMap('svc-rbac-cm', {}));
          }
          await writeFile(path.join(root, 'svc-initial-admin-secret.yaml'), ADMIN_SECRET);
          await writeFile(path.join(root, 'svc-secret.yaml'), secretText);
          const before = (await readdir(root)).sort();
          const { log, text } = captureLog();

          expect(await ensureInitialConfig({ dir: root, log })).to.deep.equal({ createdFiles: [], addedKeys: [] });
          expect(await readFile(path.join(root, 'svc-initial-admin-secret.yaml'), 'utf8')).to.equal(ADMIN_SECRET);
          expect(await readFile(path.join(root, 'svc-secret.yaml'), 'utf8')).to.equal(secretText);
          expect((await readdir(root)).sort()).to.deep.equal(before);
          expect(text()).to.include('Secret svc-secret cannot be loaded (').and.include(problem);
          expect(text()).to.include('its generated keys and svc-initial-admin-secret are left as they are until it is fixed');
          expect(text()).not.to.include('initial admin password written');
        });
      }
    }
  });

  it('writes the clear password before its hash: a failure in between leaves no hash without a password', async () => {
    await writeFile(path.join(root, 'svc-cm.yaml'), configMap('svc-cm', {}));
    await writeFile(path.join(root, 'svc-rbac-cm.yaml'), configMap('svc-rbac-cm', {}));
    await writeFile(path.join(root, 'svc-secret.yaml'), secret('svc-secret', { 'server.secretkey': 'abcdefabcdefabcdefabcdef' }));
    await writeFile(path.join(root, 'zz-broken.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n');
    let error: unknown;
    await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) }).catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal(
      `cannot update Secret svc-initial-admin-secret: not found, and ${path.join(root, 'zz-broken.yaml')} does not parse (it may hold it); fix the file first`,
    );
    expect((await load(root)).secrets.get('svc-secret')?.data).to.deep.equal({ 'server.secretkey': 'abcdefabcdefabcdefabcdef' });

    await rm(path.join(root, 'zz-broken.yaml'));
    await ensureInitialConfig({ dir: root, log: pino({ level: 'silent' }) });
    const snapshot = await load(root);
    const password = snapshot.secrets.get('svc-initial-admin-secret')?.data['password'] ?? '';
    expect(bcrypt.compareSync(password, snapshot.secrets.get('svc-secret')?.data['admin.password'] ?? '')).to.equal(true);
  });

  it('stores admin.passwordMtime in whole seconds, as session iat is', async () => {
    const now = () => new Date('2025-03-01T12:00:00.789Z');
    await ensureInitialConfig({ dir: path.join(root, 'fresh'), log: pino({ level: 'silent' }), now });
    expect((await load(path.join(root, 'fresh'))).secrets.get('svc-secret')?.data['admin.passwordMtime']).to.equal('2025-03-01T12:00:00.000Z');
    // A folder of its own: below root, fresh/svc-secret.yaml would be a second svc-secret (store-files.ts).
    const existing = path.join(root, 'existing');
    await mkdir(existing);
    await writeFile(path.join(existing, 'secret.yaml'), EXISTING_SECRET);
    await ensureInitialConfig({ dir: existing, log: pino({ level: 'silent' }), now });
    expect((await load(existing)).secrets.get('svc-secret')?.data['admin.passwordMtime']).to.equal('2025-03-01T12:00:00.000Z');
  });

  it('names the real cause when it cannot write the directory, not "already exists"', async () => {
    const dir = path.join(root, 'store');
    await mkdir(dir);
    await writeFile(path.join(root, 'boot.mts'), `import { ensureInitialConfig } from ${JSON.stringify(path.join(ROOT, 'src/config/bootstrap.ts'))};
import { createLogger } from ${JSON.stringify(path.join(ROOT, 'src/main/log.ts'))};
await ensureInitialConfig({ dir: process.argv[2], log: createLogger({ level: 'silent' }) }).catch((err) => console.log(err.message));
`);
    await chmod(root, 0o755);
    // Not writable by the unprivileged user the script runs as (tests run as root: see UNPRIVILEGED).
    await chmod(dir, 0o555);
    const { stdout, stderr } = await runEntry(path.join(root, 'boot.mts'), [dir], process.env, undefined, UNPRIVILEGED);
    expect(stderr).to.equal('');
    expect(stdout).to.equal(`cannot create the initial configuration in ${dir}: EACCES: permission denied, open '${path.join(dir, '.svc-bootstrap.lock')}'\n`);
    expect(await readdir(dir)).to.deep.equal([]);
  });
});
