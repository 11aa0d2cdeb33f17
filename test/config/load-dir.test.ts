import { execFileSync } from 'node:child_process';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { EMPTY_MEMORY, loadDirectory } from '../../src/config/load-dir.js';
import { formatProblem } from '../../src/config/problems.js';
import { MAX_MANIFEST_FILE_BYTES } from '../../src/lib/regular-file.js';
import { heapAfterGc } from '../helpers/heap.js';
import { clusterSecret, configMap, secret } from '../helpers/manifests.js';
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
});
