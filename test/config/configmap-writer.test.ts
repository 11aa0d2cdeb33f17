/** config/configmap-writer and DirStore.updateConfigMap: a ConfigMap's data edited in place, under the writers' lock, in force or undone. */
import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import YAML from 'yaml';
import { updateConfigMapOnDisk } from '../../src/config/configmap-writer.js';
import { openDirStore } from '../../src/config/dir-store.js';
import { SecretNotInForce } from '../../src/config/secret-in-force.js';
import { Unavailable } from '../../src/errors.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const CM = `# the operator's settings
apiVersion: v1
kind: ConfigMap
metadata:
  name: svc-cm   # svc reads this one
data:
  accounts.bob: login        # bob from ops
  url: 'https://svc.example'
---
# another object, left byte for byte
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
data: {  a:   "1" }
`;

describe('config/configmap-writer', () => {
  let root: string;
  tempDirEach('svc-cm-writer-', (made) => (root = made));

  it('sets and deletes keys keeping comments, quoting and the other documents as they were; "false" stays a string', async () => {
    const file = path.join(root, 'svc-cm.yaml');
    await writeFile(file, CM);
    const result = await updateConfigMapOnDisk({ dir: root, name: 'svc-cm', mutate: (current) => ({ set: { 'accounts.bob.enabled': current['accounts.bob'] === 'login' ? 'false' : 'x' }, delete: ['url'] }) });
    expect(result).to.deep.include({ file, created: false });
    const text = await readFile(file, 'utf8');
    expect(text).to.equal(CM.replace("  url: 'https://svc.example'\n", '  accounts.bob.enabled: "false"\n'));
    expect((YAML.parseAllDocuments(text)[0]?.toJS() as { data: Record<string, unknown> }).data['accounts.bob.enabled']).to.equal('false');
  });

  it('refuses a file that does not parse, naming it, and writes nothing', async () => {
    const file = path.join(root, 'svc-cm.yaml');
    await writeFile(file, `${CM}  bad: [\n`);
    let error: unknown;
    await updateConfigMapOnDisk({ dir: root, name: 'svc-cm', mutate: () => ({ set: { a: '1' } }) }).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(Unavailable);
    expect((error as Error).message).to.match(new RegExp(`^cannot update ConfigMap svc-cm: not found, and ${file} does not parse \\(it may hold it\\); fix the file first$`));
    expect(await readFile(file, 'utf8')).to.equal(`${CM}  bad: [\n`);
  });

  it('waits for the lock file other writers hold, and gives up past the timeout with a 503 saying so', async () => {
    const file = path.join(root, 'svc-cm.yaml');
    await writeFile(file, CM);
    await writeFile(`${file}.lock`, '4242 busy-writer\n');
    let error: unknown;
    await updateConfigMapOnDisk({ dir: root, name: 'svc-cm', hint: file, mutate: () => ({ set: { a: '1' } }), lock: { timeoutMs: 100 } }).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(Unavailable);
    expect((error as Error).message).to.match(/^timed out after 100 ms waiting for the lock file .*svc-cm\.yaml\.lock, which another writer holds; try again$/);
    expect(await readFile(file, 'utf8')).to.equal(CM);
  });

  it('creates <dir>/<name>.yaml when no file holds the ConfigMap', async () => {
    const result = await updateConfigMapOnDisk({ dir: root, name: 'svc-cm', mutate: () => ({ set: { 'accounts.erin': 'login' } }) });
    expect(result).to.deep.include({ file: path.join(root, 'svc-cm.yaml'), created: true });
    expect(YAML.parse(await readFile(path.join(root, 'svc-cm.yaml'), 'utf8'))).to.deep.equal({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'svc-cm' }, data: { 'accounts.erin': 'login' } });
  });

  it('DirStore.updateConfigMap resolves with the change in force, and undoes a write the loader would not take', async () => {
    const file = path.join(root, 'svc-cm.yaml');
    await writeFile(file, CM);
    const store = await openDirStore({ dir: root, log: pino({ level: 'silent' }), watch: false });
    try {
      await store.updateConfigMap('svc-cm', () => ({ set: { 'accounts.bob.enabled': 'false' } }));
      expect(store.current().configMaps.get('svc-cm')?.data['accounts.bob.enabled']).to.equal('false');
      // A key whose value is a list makes the loader refuse the object: the write must not stand.
      const broken = (await readFile(file, 'utf8')).replace('  accounts.bob: login ', '  list: [1]\n  accounts.bob: login ');
      await writeFile(file, broken);
      let error: unknown;
      await store.updateConfigMap('svc-cm', () => ({ set: { 'accounts.bob.enabled': 'true' } })).catch((err: unknown) => (error = err));
      expect(error).to.be.instanceOf(SecretNotInForce);
      expect((error as Error).message).to.equal('svc-cm has a problem, so this change cannot take effect: data.list: must be a string; fix it first');
      expect(await readFile(file, 'utf8')).to.equal(broken);
    } finally {
      await store.close();
    }
  });
});
