import { execFileSync } from 'node:child_process';
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { EMPTY_MEMORY, loadDirectory, type LoadResult } from '../../src/config/load-dir.js';
import { INITIAL_ADMIN_SECRET, RBAC_CM, SETTINGS_CM, SETTINGS_SECRET } from '../../src/config/manifests.js';
import { formatProblem } from '../../src/config/problems.js';
import { MAX_MANIFEST_FILE_BYTES } from '../../src/lib/regular-file.js';
import { heapAfterGc } from '../helpers/heap.js';
import { application, clusterSecret, configMap, secret } from '../helpers/manifests.js';
import { ROOT, runEntry, UNPRIVILEGED } from '../helpers/run.js';
import { tempDirEach } from '../helpers/temp-dir.js';

/** Prints the problems of one load of argv[2] as JSON; run as a user that permissions apply to. */
const LOAD_SCRIPT = `import { loadDirectory, EMPTY_MEMORY } from ${JSON.stringify(path.join(ROOT, 'src/config/load-dir.ts'))};
import { formatProblem } from ${JSON.stringify(path.join(ROOT, 'src/config/problems.ts'))};
const result = await loadDirectory(process.argv[2], EMPTY_MEMORY);
console.log(JSON.stringify({ problems: result.problems.map(formatProblem), configMaps: [...result.snapshot.configMaps.keys()] }));
`;

describe('config/load-dir', () => {
  let dir: string;
  tempDirEach('svc-load-dir-', (made) => (dir = made));

  it('skips a subdirectory it cannot read (lost+found), reporting it, and loads the rest', async () => {
    const store = path.join(dir, 'store');
    await mkdir(path.join(store, 'lost+found'), { recursive: true });
    await writeFile(path.join(store, 'cm.yaml'), configMap('svc-cm', { url: 'https://svc.example.com' }));
    await writeFile(path.join(dir, 'load.mts'), LOAD_SCRIPT);
    await chmod(path.join(store, 'lost+found'), 0o000);
    await chmod(dir, 0o755);
    const { code, stdout, stderr } = await runEntry(path.join(dir, 'load.mts'), [store], process.env, undefined, UNPRIVILEGED);
    expect(stderr).to.equal('');
    expect(code).to.equal(0);
    expect(JSON.parse(stdout)).to.deep.equal({
      problems: [`${path.join(store, 'lost+found')}: cannot be read (EACCES); its files are skipped`],
      configMaps: ['svc-cm'],
    });
  });

  it('never repeats the text of a document that cannot be read', async () => {
    await writeFile(path.join(dir, 's.yaml'), 'kind: Secret\nmetadata: {name: s}\nstringData:\n  password: *s3cretVALUE\n');
    const { problems } = await loadDirectory(dir, EMPTY_MEMORY);
    expect(problems.map(formatProblem)).to.deep.equal([
      `${path.join(dir, 's.yaml')}: YAML cannot be read: An alias names an anchor that is not set before it`,
    ]);
  });

  it('never repeats the text around a parse error that the YAML library would quote', async () => {
    await writeFile(path.join(dir, 's.yaml'), 'kind: Secret\nmetadata: {name: s}\nstringData:\n  password: "s3cret\\qVALUE"\n');
    const { problems } = await loadDirectory(dir, EMPTY_MEMORY);
    expect(problems.map(formatProblem)).to.deep.equal([
      `${path.join(dir, 's.yaml')}: YAML does not parse at line 4, column 20: Invalid escape sequence in a double-quoted string`,
    ]);
  });

  it('rejects an object with a bad label, keeping its last good version (labels and all)', async () => {
    const file = path.join(dir, 'clusters.yaml');
    await writeFile(file, clusterSecret('cluster-a', 'a', 'https://a.example'));
    const first = await loadDirectory(dir, EMPTY_MEMORY);
    await writeFile(file, clusterSecret('cluster-a', 'a', 'https://a2.example').replace('labels:\n', 'labels:\n    owner:\n'));
    const second = await loadDirectory(dir, first.memory);
    expect(second.problems.map(formatProblem)).to.deep.equal([`${file}: Secret/cluster-a.metadata.labels: owner: must be a string`]);
    expect(second.keptLastGood).to.deep.equal(['Secret/cluster-a']);
    expect(second.snapshot.secrets.get('cluster-a')).to.deep.equal(first.snapshot.secrets.get('cluster-a'));
    expect(second.snapshot.secrets.get('cluster-a')?.labels).to.include({ 'svc.io/secret-type': 'cluster' });
  });

  it('reads only regular files under the size cap: a FIFO, a device or a huge file is a problem, the rest loads', async () => {
    await writeFile(path.join(dir, 'cm.yaml'), configMap('svc-cm', { url: 'https://svc.example.com' }));
    // A FIFO halted the load (readFile waits for a writer), /dev/zero was read without end.
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    await symlink(path.join(dir, 'pipe'), path.join(dir, 'fifo.yaml'));
    await symlink('/dev/zero', path.join(dir, 'zero.yaml'));
    await writeFile(path.join(dir, 'huge.yaml'), `# ${'x'.repeat(MAX_MANIFEST_FILE_BYTES)}\n`);
    const { problems, snapshot, rejectedFiles } = await loadDirectory(dir, EMPTY_MEMORY);
    expect(problems.map(formatProblem)).to.deep.equal([
      `${path.join(dir, 'fifo.yaml')}: is not a regular file (a FIFO); it is not read`,
      `${path.join(dir, 'huge.yaml')}: is larger than 4 MiB; it is not read`,
      `${path.join(dir, 'zero.yaml')}: is not a regular file (a character device); it is not read`,
    ]);
    expect(rejectedFiles).to.deep.equal(['fifo.yaml', 'huge.yaml', 'zero.yaml'].map((f) => path.join(dir, f)));
    expect([...snapshot.configMaps.keys()]).to.deep.equal(['svc-cm']);
  });

  it('keeps no version of a file alive through a value read from it', async function () {
    // A value cut from a file's text used to keep the whole text: a cache holding
    // server.secretkey kept one version of svc-secret per entry, each rewrite another.
    this.timeout(60_000);
    const versions = 40;
    const padding = `# ${'p'.repeat(256 * 1024)}\n`;
    const kept: string[] = [];
    const before = heapAfterGc();
    for (let i = 0; i < versions; i++) {
      await writeFile(path.join(dir, 'svc-secret.yaml'), padding + secret('svc-secret', { 'server.secretkey': `key-of-version-${i}-0123456789abcdef` }));
      const value = (await loadDirectory(dir, EMPTY_MEMORY)).snapshot.secrets.get('svc-secret')?.data['server.secretkey'];
      expect(value).to.equal(`key-of-version-${i}-0123456789abcdef`);
      kept.push(value!);
    }
    const grown = heapAfterGc() - before;
    // Each version's text is 256 kB: kept alive, the 40 would hold 10 MB.
    expect(grown, `the heap grew ${Math.round(grown / 1024)} kB while ${kept.length} values were kept`).to.be.below(2 * 1024 * 1024);
  });

  describe('each store from its own file', () => {
    /** The four stores, each with its kind. */
    const STORES = [
      { name: SETTINGS_CM, kind: 'ConfigMap' },
      { name: RBAC_CM, kind: 'ConfigMap' },
      { name: SETTINGS_SECRET, kind: 'Secret' },
      { name: INITIAL_ADMIN_SECRET, kind: 'Secret' },
    ] as const;
    type Store = (typeof STORES)[number];
    const text = (store: Store, from: string) => (store.kind === 'ConfigMap' ? configMap(store.name, { from }) : secret(store.name, { from }));
    const values = (load: LoadResult, store: Store) =>
      (store.kind === 'ConfigMap' ? load.snapshot.configMaps.get(store.name) : load.snapshot.secrets.get(store.name))?.data;
    /** Every store in `<name>.yaml`, as the first start writes them. */
    const writeOwnFiles = async (from: string) => {
      for (const store of STORES) await writeFile(path.join(dir, `${store.name}.yaml`), text(store, from));
    };
    const file = (name: string) => path.join(dir, name);

    it("loads today's layouts without a problem: <name>.yaml or .yml in any folder, a file holding only the store, a store's own file holding other objects", async () => {
      await mkdir(path.join(dir, 'team'));
      await writeFile(file('svc-cm.yaml'), `${configMap(SETTINGS_CM, { from: 'own' })}---\n${configMap('team-cm', { v: '1' })}---\n${application('team', 'web', 'p', { name: 'in-cluster' })}`);
      await writeFile(file('team/svc-rbac-cm.yml'), configMap(RBAC_CM, { from: 'own' }));
      await writeFile(file('secret.yaml'), `# kept in git\n---\n${secret(SETTINGS_SECRET, { from: 'own' })}---\n`);
      await writeFile(file('initial.yaml'), secret(INITIAL_ADMIN_SECRET, { from: 'own' }));
      const load = await loadDirectory(dir, EMPTY_MEMORY);
      expect(load.problems.map(formatProblem)).to.deep.equal([]);
      expect(load.misplacedStores).to.deep.equal([]);
      for (const store of STORES) expect(values(load, store), store.name).to.deep.equal({ from: 'own' });
      expect(load.snapshot.configMaps.get('team-cm')?.data).to.deep.equal({ v: '1' });
    });

    for (const store of STORES) {
      const host = store.name === SETTINGS_CM ? RBAC_CM : SETTINGS_CM;
      const hostStore = STORES.find((s) => s.name === host) as Store;

      it(`${store.name} as a second document of ${host}.yaml: that file is refused, its last good version stays, and ${store.name} is read from its own file`, async () => {
        await writeOwnFiles('own');
        const good = await loadDirectory(dir, EMPTY_MEMORY);
        // The editor of the host file changes its own store and appends a copy of another.
        await writeFile(file(`${host}.yaml`), `${text(hostStore, 'edited')}---\n${text(store, 'forged')}`);
        const message = `${file(`${host}.yaml`)}: document 2 defines ${store.kind} ${store.name}, which is read only from ${store.name}.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`;

        const running = await loadDirectory(dir, good.memory);
        expect(running.problems.map(formatProblem)).to.deep.equal([message]);
        expect(running.misplacedStores.map(formatProblem)).to.deep.equal([message]);
        expect(running.rejectedFiles).to.deep.equal([file(`${host}.yaml`)]);
        expect(running.keptLastGood).to.deep.equal([file(`${host}.yaml`)]);
        for (const each of STORES) expect(values(running, each), each.name).to.deep.equal({ from: 'own' });

        // The same edit on a fresh start: the start is refused on misplacedStores; nothing forged is loaded.
        const fresh = await loadDirectory(dir, EMPTY_MEMORY);
        expect(fresh.misplacedStores.map(formatProblem)).to.deep.equal([message]);
        expect(values(fresh, store)).to.deep.equal({ from: 'own' });
        expect(values(fresh, hostStore)).to.equal(undefined);
      });

      it(`${store.name} in another file that holds nothing else: both files are refused, the last good ${store.name} stays`, async () => {
        await writeOwnFiles('own');
        const good = await loadDirectory(dir, EMPTY_MEMORY);
        // a.yaml sorts before every store's own file: the first in path order used to win.
        await writeFile(file('a.yaml'), text(store, 'forged'));
        await writeFile(file(`${store.name}.yaml`), text(store, 'changed'));
        const running = await loadDirectory(dir, good.memory);
        expect(running.problems.map(formatProblem)).to.deep.equal([
          `${file('a.yaml')}: document 1 defines ${store.kind} ${store.name}, which is also defined in ${file(`${store.name}.yaml`)}; a store is read from one file only, so none of them is used`,
          `${file(`${store.name}.yaml`)}: document 1 defines ${store.kind} ${store.name}, which is also defined in ${file('a.yaml')}; a store is read from one file only, so none of them is used`,
        ]);
        expect(running.misplacedStores).to.have.length(2);
        expect(running.rejectedFiles).to.deep.equal([file('a.yaml'), file(`${store.name}.yaml`)]);
        expect(running.keptLastGood).to.deep.equal([file(`${store.name}.yaml`)]);
        expect(values(running, store)).to.deep.equal({ from: 'own' });

        // Once the copy is gone, the store's own file applies again.
        await rm(file('a.yaml'));
        const fixed = await loadDirectory(dir, running.memory);
        expect(fixed.problems).to.deep.equal([]);
        expect(values(fixed, store)).to.deep.equal({ from: 'changed' });
      });

      it(`${store.name} alone in a file named after ${host}: refused, the last good of both stays`, async () => {
        await writeOwnFiles('own');
        const good = await loadDirectory(dir, EMPTY_MEMORY);
        await writeFile(file(`${host}.yml`), text(store, 'forged'));
        const running = await loadDirectory(dir, good.memory);
        expect(running.problems.map(formatProblem)).to.deep.equal([
          `${file(`${host}.yml`)}: document 1 defines ${store.kind} ${store.name}, which is read only from ${store.name}.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`,
        ]);
        expect(values(running, store)).to.deep.equal({ from: 'own' });
        expect(values(running, hostStore)).to.deep.equal({ from: 'own' });
      });
    }

    it('drops a last good version that now clashes with another file, so that no store is read from two files', async () => {
      // secret.yaml held svc-secret alone; then it gains a second document, and svc-secret.yaml appears.
      await writeFile(file('secret.yaml'), secret(SETTINGS_SECRET, { from: 'old' }));
      const good = await loadDirectory(dir, EMPTY_MEMORY);
      await writeFile(file('secret.yaml'), `${secret(SETTINGS_SECRET, { from: 'old' })}---\n${configMap('team-cm', {})}`);
      await writeFile(file('svc-secret.yaml'), secret(SETTINGS_SECRET, { from: 'new' }));
      const running = await loadDirectory(dir, good.memory);
      expect(running.rejectedFiles).to.deep.equal([file('secret.yaml'), file('svc-secret.yaml')]);
      expect(running.problems.map(formatProblem)).to.deep.equal([
        `${file('secret.yaml')}: document 1 defines Secret svc-secret, which is read only from svc-secret.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`,
        `${file('secret.yaml')}: document 1 defines Secret svc-secret, which is also defined in ${file('svc-secret.yaml')}; a store is read from one file only, so none of them is used`,
        `${file('svc-secret.yaml')}: document 1 defines Secret svc-secret, which is also defined in ${file('secret.yaml')}; a store is read from one file only, so none of them is used`,
      ]);
      // The last good version of secret.yaml clashes with svc-secret.yaml: neither is read.
      expect(running.snapshot.secrets.has(SETTINGS_SECRET)).to.equal(false);
      expect(running.keptLastGood).to.deep.equal([]);
    });
  });
});
