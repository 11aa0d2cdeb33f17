import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import { openDirStore, type DirStore } from '../../src/config/dir-store.js';
import type { StoreSnapshot } from '../../src/config/manifests.js';
import { formatProblem } from '../../src/config/problems.js';
import { SecretNotInForce } from '../../src/config/secret-in-force.js';
import { StoresOutsideTheirFiles } from '../../src/config/store-files.js';
import type { SecretPatch } from '../../src/config/store.js';
import { Unavailable } from '../../src/errors.js';
import { STATUS } from '../../src/http/errors.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');

function captureLog(): { log: Logger; text: () => string } {
  let buffer = '';
  const log = pino({ level: 'debug' }, { write: (line: string) => void (buffer += line) });
  return { log, text: () => buffer };
}

/** Writes like an editor: temp file + rename, so the store never reads a half-written file. */
async function writeAtomically(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}`);
  await writeFile(temp, text);
  await rename(temp, file);
}

async function waitFor(what: string, check: () => boolean, deadlineMs = 2000): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > deadlineMs) throw new Error(`not within ${deadlineMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

/** Lines only in `before` and lines only in `after`, by longest common subsequence. */
function lineDiff(before: string, after: string): { removed: string[]; added: string[] } {
  const a = before.split('\n');
  const b = after.split('\n');
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      const row = lcs[i]!;
      row[j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, row[j + 1]!);
    }
  }
  const removed: string[] = [];
  const added: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) [i, j] = [i + 1, j + 1];
    else if (j < b.length && (i === a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) added.push(b[j++]!);
    else removed.push(a[i++]!);
  }
  return { removed, added };
}

const cm = (name: string, data: Record<string, string>): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}\n`)
    .join('')}`;

const SECRET_FILE = `# Secrets for the demo install.
# Keep this file in git.
apiVersion: v1
kind: ConfigMap
metadata:
    name: other-cm
data:
    z:   "1"    # odd spacing, kept: this document is not edited
---
apiVersion: v1
kind: Secret
metadata:
  name: svc-secret
  labels:
    app.kubernetes.io/part-of: svc
type: Opaque
# generated keys below
data:
  # the server key
  server.secretkey: c2VjcmV0    # rotated 2024-01, aligned comments are kept
  a: MA==
  b: MA==
  'quoted.key': eA==

  after.blank: eQ==
stringData:
  plain: hello

# tail comment
---
apiVersion: v1
kind: Secret
metadata:
  name: another
stringData:
  k: v
`;

describe('config/dir-store', () => {
  let dir: string;
  let stores: DirStore[];
  const open = async (log: Logger = pino({ level: 'silent' }), debounceMs?: number): Promise<DirStore> => {
    const store = await openDirStore({ dir, log, ...(debounceMs !== undefined ? { debounceMs } : {}) });
    stores.push(store);
    return store;
  };

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-dir-store-'));
    stores = [];
  });
  afterEach(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await rm(dir, { recursive: true, force: true });
  });

  describe('loading', () => {
    it('reads every document of every *.yaml/*.yml below the directory, skipping dot files', async () => {
      await writeFile(
        path.join(dir, 'a.yaml'),
        `${cm('team-cm', { url: 'http://x' })}---\n# only a comment\n---\nkind: Deployment\nmetadata: {name: d}\n---\n` +
          'apiVersion: svc.io/v1alpha1\nkind: Application\nmetadata: {name: app1, namespace: team}\n' +
          'spec: {project: p1, destination: {name: in-cluster}}\n',
      );
      await mkdir(path.join(dir, 'sub', 'deeper'), { recursive: true });
      await writeFile(path.join(dir, 'sub', 'deeper', 'rbac.yml'), cm('svc-rbac-cm', { 'policy.default': 'role:readonly' }));
      await writeFile(path.join(dir, 'sub', '.hidden.yaml'), cm('hidden', {}));
      await writeFile(path.join(dir, 'notes.txt'), cm('txt', {}));
      const snapshot = (await open()).current();
      expect([...snapshot.configMaps.keys()].sort()).to.deep.equal(['svc-rbac-cm', 'team-cm']);
      expect(snapshot.configMaps.get('team-cm')?.data).to.deep.equal({ url: 'http://x' });
      expect(snapshot.configMaps.get('svc-rbac-cm')?.file).to.equal(path.join(dir, 'sub', 'deeper', 'rbac.yml'));
      expect(snapshot.applications).to.deep.equal([
        { name: 'app1', namespace: 'team', file: path.join(dir, 'a.yaml'), project: 'p1', destination: { name: 'in-cluster' } },
      ]);
    });

    it('decodes Secret data from base64 and lets stringData win', async () => {
      const secret = `kind: Secret\nmetadata: {name: svc-secret}\ndata:\n  a: ${b64('from-data')}\n  b: ${b64('only-data')}\nstringData:\n  a: from-stringData\n`;
      await writeFile(path.join(dir, 's.yaml'), secret);
      expect((await open()).current().secrets.get('svc-secret')?.data).to.deep.equal({ a: 'from-stringData', b: 'only-data' });
    });

    it('keeps the first of two same-named objects in path order and reports the second', async () => {
      // Not one of the stores: those are read from their own file only (store-files.test.ts).
      await writeFile(path.join(dir, 'b.yaml'), cm('team-cm', { from: 'b' }));
      await writeFile(path.join(dir, 'a.yaml'), cm('team-cm', { from: 'a' }));
      const store = await open();
      expect(store.current().configMaps.get('team-cm')?.data).to.deep.equal({ from: 'a' });
      expect(store.problems().map(formatProblem)).to.deep.equal([
        `${path.join(dir, 'b.yaml')}: ConfigMap/team-cm: is also defined in ${path.join(dir, 'a.yaml')}, which wins (first in path order); this one is ignored`,
      ]);
    });

    it('starts empty on a missing directory and picks it up once it exists', async () => {
      await rm(dir, { recursive: true });
      const store = await open();
      expect(store.current().configMaps.size).to.equal(0);
      await writeAtomically(path.join(dir, 'cm.yaml'), cm('svc-cm', { url: 'u' }));
      await waitFor('the new directory is read', () => store.current().configMaps.has('svc-cm'), 3000);
    });
  });

  describe('watching', () => {
    it('applies a change within 2 s and tells listeners', async () => {
      await writeFile(path.join(dir, 'cm.yaml'), cm('svc-cm', { url: 'one' }));
      const store = await open();
      const seen: StoreSnapshot[] = [];
      store.onChange((s) => seen.push(s));
      await writeAtomically(path.join(dir, 'cm.yaml'), cm('svc-cm', { url: 'two' }));
      await waitFor('url is two', () => store.current().configMaps.get('svc-cm')?.data['url'] === 'two');
      expect(seen.at(-1)).to.equal(store.current());
    });

    it('sees repeated renames over one file, in-place writes and new subdirectories without the poll', async () => {
      await writeFile(path.join(dir, 'cm.yaml'), cm('svc-cm', { v: '0' }));
      const store = await openDirStore({ dir, log: pino({ level: 'silent' }), pollMs: 60_000 });
      stores.push(store);
      const value = (name: string): string | undefined => store.current().configMaps.get(name)?.data['v'];
      await new Promise((resolve) => setTimeout(resolve, 50)); // let the watchers start
      for (const v of ['1', '2', '3']) {
        await writeAtomically(path.join(dir, 'cm.yaml'), cm('svc-cm', { v }));
        await waitFor(`rename ${v} seen`, () => value('svc-cm') === v, 900);
      }
      await writeFile(path.join(dir, 'cm.yaml'), cm('svc-cm', { v: '4' }));
      await waitFor('in-place write seen', () => value('svc-cm') === '4', 900);
      await mkdir(path.join(dir, 'team'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await writeFile(path.join(dir, 'team', 'x.yaml'), cm('team-cm', { v: '1' }));
      await waitFor('file in new subdirectory seen', () => value('team-cm') === '1', 900);
    });

    it('keeps the last good documents of a file that does not parse, and applies the other files', async () => {
      const { log, text } = captureLog();
      await writeFile(path.join(dir, 'a.yaml'), cm('cm-a', { v: '1' }));
      await writeFile(path.join(dir, 'b.yaml'), cm('cm-b', { v: '1' }));
      const store = await open(log);
      await writeAtomically(path.join(dir, 'a.yaml'), 'kind: ConfigMap\nmetadata: {name: cm-a}\ndata:\n  v: [2\n  w: x\n');
      await writeAtomically(path.join(dir, 'b.yaml'), cm('cm-b', { v: '2' }));
      await waitFor('cm-b is 2', () => store.current().configMaps.get('cm-b')?.data['v'] === '2');
      expect(store.current().configMaps.get('cm-a')?.data).to.deep.equal({ v: '1' });
      const [problem, ...others] = store.problems();
      expect(others).to.deep.equal([]);
      expect(problem?.source).to.equal(path.join(dir, 'a.yaml'));
      expect(problem?.message).to.match(/^YAML does not parse at line 5, column 3: /);
      expect(text()).to.include(`config rejected: ${path.join(dir, 'a.yaml')}: YAML does not parse at line 5, column 3`);
      await writeAtomically(path.join(dir, 'a.yaml'), cm('cm-a', { v: '3' }));
      await waitFor('cm-a is 3', () => store.current().configMaps.get('cm-a')?.data['v'] === '3');
      expect(store.problems()).to.deep.equal([]);
    });

    it('refuses to open on a store defined outside its own file, naming the file, the document and the store', async () => {
      await writeFile(path.join(dir, 'svc-cm.yaml'), `${cm('svc-cm', {})}---\nkind: Secret\nmetadata: {name: svc-secret}\nstringData: {server.secretkey: forged}\n`);
      await writeFile(path.join(dir, 'svc-secret.yaml'), 'kind: Secret\nmetadata: {name: svc-secret}\nstringData: {server.secretkey: real}\n');
      let error: unknown;
      await open().catch((err: unknown) => (error = err));
      expect(error).to.be.instanceOf(StoresOutsideTheirFiles);
      expect((error as Error).message).to.equal(
        `${dir}: a store is defined outside its own file, so this configuration is refused (docs/config-store.md): ` +
          `${path.join(dir, 'svc-cm.yaml')}: document 2 defines Secret svc-secret, which is read only from svc-secret.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`,
      );
    });

    it('keeps the last good svc-cm.yaml when an edit appends another store to it, says why in the log, and applies the file once fixed', async () => {
      const { log, text } = captureLog();
      await writeFile(path.join(dir, 'svc-cm.yaml'), cm('svc-cm', { url: 'https://one' }));
      await writeFile(path.join(dir, 'svc-rbac-cm.yaml'), cm('svc-rbac-cm', { 'policy.csv': '' }));
      const store = await open(log);
      await writeAtomically(path.join(dir, 'svc-cm.yaml'), `${cm('svc-cm', { url: 'https://two' })}---\n${cm('svc-rbac-cm', { 'policy.csv': 'g, carol, role:admin' })}`);
      const file = path.join(dir, 'svc-cm.yaml');
      const problem = `${file}: document 2 defines ConfigMap svc-rbac-cm, which is read only from svc-rbac-cm.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`;
      await waitFor('the edit is refused', () => store.problems().length > 0);
      expect(store.problems().map(formatProblem)).to.deep.equal([problem]);
      expect(store.current().configMaps.get('svc-rbac-cm')?.data).to.deep.equal({ 'policy.csv': '' });
      expect(store.current().configMaps.get('svc-cm')?.data).to.deep.equal({ url: 'https://one' });
      expect(text()).to.include(`config rejected: ${problem}`);
      expect(text()).to.include(`keeping the last good version of ${file}`);
      await writeAtomically(file, cm('svc-cm', { url: 'https://three' }));
      await waitFor('the fixed file applies', () => store.current().configMaps.get('svc-cm')?.data['url'] === 'https://three');
      expect(store.problems()).to.deep.equal([]);
    });

    it('keeps the last good version of a malformed object while the good ones apply', async () => {
      const { log, text } = captureLog();
      await writeFile(path.join(dir, 'a.yaml'), `${cm('cm-a', { v: '1' })}---\n${cm('cm-b', { v: '1' })}`);
      const store = await open(log);
      await writeAtomically(
        path.join(dir, 'a.yaml'),
        `kind: ConfigMap\nmetadata: {name: cm-a}\ndata:\n  v: [1, 2]\n---\n${cm('cm-b', { v: '2' })}`,
      );
      await waitFor('cm-b is 2', () => store.current().configMaps.get('cm-b')?.data['v'] === '2');
      expect(store.current().configMaps.get('cm-a')?.data).to.deep.equal({ v: '1' });
      expect(store.problems().map(formatProblem)).to.deep.equal([`${path.join(dir, 'a.yaml')}: ConfigMap/cm-a.data: v: must be a string`]);
      expect(text()).to.include('keeping the last good version of ConfigMap/cm-a');
    });

    it('never shows a half-applied change: two ConfigMaps changed in one file move together', async () => {
      await writeFile(path.join(dir, 'pair.yaml'), `${cm('cm-a', { v: '0' })}---\n${cm('cm-b', { v: '0' })}`);
      const store = await open(pino({ level: 'silent' }), 5);
      const seen: StoreSnapshot[] = [store.current()];
      store.onChange((s) => seen.push(s));
      const sampler = setInterval(() => seen.push(store.current()), 2);
      try {
        for (let i = 1; i <= 15; i++) {
          await writeAtomically(path.join(dir, 'pair.yaml'), `${cm('cm-a', { v: String(i) })}---\n${cm('cm-b', { v: String(i) })}`);
          await new Promise((resolve) => setTimeout(resolve, 15 + (i % 4) * 10));
        }
        await waitFor('last version applied', () => store.current().configMaps.get('cm-b')?.data['v'] === '15');
      } finally {
        clearInterval(sampler);
      }
      for (const snapshot of seen) {
        expect(snapshot.configMaps.get('cm-a')?.data['v']).to.equal(snapshot.configMaps.get('cm-b')?.data['v']);
      }
      expect(new Set(seen.map((s) => s.configMaps.get('cm-a')?.data['v'])).size).to.be.greaterThan(2);
    });

    it('logs a listener that throws and still calls the others', async () => {
      const { log, text } = captureLog();
      const store = await open(log);
      let called = 0;
      store.onChange(() => {
        throw new Error('listener bug');
      });
      store.onChange(() => void called++);
      await writeAtomically(path.join(dir, 'cm.yaml'), cm('svc-cm', {}));
      await waitFor('second listener called', () => called === 1);
      expect(text()).to.include('a configuration change listener failed').and.include('listener bug');
    });
  });

  describe('updateSecret', () => {
    const increment = (key: string) => (current: Readonly<Record<string, string>>) => ({
      set: { [key]: String(Number(current[key] ?? '0') + 1) },
    });

    it('changes only the lines of the keys it changes, keeping comments, order and other objects', async () => {
      const file = path.join(dir, 'svc-secret.yaml');
      await writeFile(file, SECRET_FILE);
      const store = await open();
      await store.updateSecret('svc-secret', (current) => {
        expect(current).to.include({ a: '0', 'quoted.key': 'x', plain: 'hello', 'server.secretkey': 'secret' });
        return { set: { a: '1', plain: 'bye', c: 'new' }, delete: ['quoted.key'] };
      });
      expect(lineDiff(SECRET_FILE, await readFile(file, 'utf8'))).to.deep.equal({
        removed: ["  a: MA==", "  'quoted.key': eA==", '  plain: hello'],
        added: ['  a: MQ==', `  c: ${b64('new')}`, '  plain: bye'],
      });
      expect(store.current().secrets.get('svc-secret')?.data).to.deep.equal({
        'server.secretkey': 'secret', a: '1', b: '0', 'after.blank': 'y', c: 'new', plain: 'bye',
      });
    });

    it('removes a deleted key from both data and stringData, and writes nothing when nothing changes', async () => {
      const file = path.join(dir, 's.yaml');
      await writeFile(file, `kind: Secret\nmetadata:\n  name: s\ndata:\n  k: ${b64('d')}\n  keep: ${b64('x')}\nstringData:\n  k: plain\n`);
      const store = await open();
      await store.updateSecret('s', () => ({ delete: ['k'] }));
      expect(await readFile(file, 'utf8')).to.equal(`kind: Secret\nmetadata:\n  name: s\ndata:\n  keep: ${b64('x')}\nstringData: {}\n`);
      const before = await stat(file);
      await store.updateSecret('s', () => ({ set: { keep: 'x' } }));
      expect((await stat(file)).ino).to.equal(before.ino);
    });

    it('creates a missing Secret in <dir>/<name>.yaml, labelled part-of svc, readable by owner only', async () => {
      await writeFile(path.join(dir, 'cm.yaml'), cm('svc-cm', {}));
      const store = await open();
      await store.updateSecret('svc-extra', () => ({ set: { token: 't0ken' } }));
      const secret = store.current().secrets.get('svc-extra');
      expect(secret).to.deep.equal({
        name: 'svc-extra', file: path.join(dir, 'svc-extra.yaml'),
        labels: { 'app.kubernetes.io/part-of': 'svc' }, data: { token: 't0ken' },
      });
      expect((await stat(path.join(dir, 'svc-extra.yaml'))).mode & 0o777).to.equal(0o600);
    });

    it('refuses to write a file that does not parse, naming it', async () => {
      const file = path.join(dir, 's.yaml');
      await writeFile(file, `kind: Secret\nmetadata: {name: s}\ndata:\n  k: ${b64('v')}\n`);
      const store = await open();
      await writeFile(file, 'kind: Secret\nmetadata: {name: s\n');
      let error: unknown;
      await store.updateSecret('s', () => ({ set: { k: 'w' } })).catch((err: unknown) => (error = err));
      // A 503 saying why, not a bare 500: the store is in trouble, the server is not.
      expect(error).to.be.instanceOf(Unavailable);
      expect(STATUS[(error as Unavailable).code]).to.equal(503);
      expect((error as Error).message).to.include(`cannot update Secret s: ${file} does not parse (YAML does not parse at line`);
      expect(await readFile(file, 'utf8')).to.equal('kind: Secret\nmetadata: {name: s\n');
    });

    it('answers a filesystem error with a 503 naming its code, never the temp file', async () => {
      // A name the directory takes, whose temp file (".<name>.<pid>.<random>.tmp") it refuses: a
      // real error of the write path that needs no root, no full disk and no read-only mount.
      const file = path.join(dir, `${'s'.repeat(240)}.yaml`);
      await writeFile(file, `kind: Secret\nmetadata: {name: s}\ndata:\n  k: ${b64('v')}\n`);
      const store = await open();
      let error: unknown;
      await store.updateSecret('s', () => ({ set: { k: 'w' } })).catch((err: unknown) => (error = err));
      expect(error).to.be.instanceOf(Unavailable);
      expect(STATUS[(error as Unavailable).code]).to.equal(503);
      expect((error as Error).message).to.equal('Secret s could not be written: a file name is too long (ENAMETOOLONG)');
      expect(store.current().secrets.get('s')?.data).to.deep.equal({ k: 'v' });
    });

    it('loses no update when two stores in one process write 200 times each, in parallel', async () => {
      const file = path.join(dir, 'svc-secret.yaml');
      await writeFile(file, SECRET_FILE);
      const [one, two] = [await open(), await open()];
      const writes = [];
      for (let i = 0; i < 200; i++) writes.push(one.updateSecret('svc-secret', increment('a')), two.updateSecret('svc-secret', increment('b')));
      await Promise.all(writes);
      expect(lineDiff(SECRET_FILE, await readFile(file, 'utf8'))).to.deep.equal({
        removed: ['  a: MA==', '  b: MA=='],
        added: [`  a: ${b64('200')}`, `  b: ${b64('200')}`],
      });
      expect(one.current().secrets.get('svc-secret')?.data).to.include({ a: '200' });
      expect(two.current().secrets.get('svc-secret')?.data).to.include({ b: '200' });
    });

    it('loses no update when another OS process writes at the same time', async function () {
      this.timeout(60_000);
      const file = path.join(dir, 'svc-secret.yaml');
      await writeFile(file, SECRET_FILE);
      const store = await open();
      const root = fileURLToPath(new URL('../..', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/store-writer.ts', dir, 'svc-secret', 'b', '200'], {
        cwd: root, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      await waitFor('the writer process is ready', () => output.includes('ready'), 20_000);
      for (let i = 0; i < 200; i++) await store.updateSecret('svc-secret', increment('a'));
      expect(await exited, output).to.equal(0);
      expect(lineDiff(SECRET_FILE, await readFile(file, 'utf8'))).to.deep.equal({
        removed: ['  a: MA==', '  b: MA=='],
        added: [`  a: ${b64('200')}`, `  b: ${b64('200')}`],
      });
    });

    const GOOD_SECRET = `kind: Secret\nmetadata:\n  name: svc-secret\ndata:\n  server.secretkey: ${b64('key')}\nstringData:\n  accounts.ci.tokens: t1\n`;

    const notInForce = async (store: DirStore, mutate: () => SecretPatch): Promise<SecretNotInForce> => {
      let error: unknown;
      await store.updateSecret('svc-secret', mutate).catch((err: unknown) => (error = err));
      expect(error).to.be.instanceOf(SecretNotInForce);
      const typed = error as SecretNotInForce;
      expect(typed).to.be.instanceOf(Unavailable);
      expect(STATUS[typed.code]).to.equal(503);
      return typed;
    };

    it('rejects (503) and puts the file back when the Secret is kept at its last good version', async () => {
      const file = path.join(dir, 'secret.yaml');
      await writeFile(file, GOOD_SECRET);
      const { log, text } = captureLog();
      const store = await open(log);
      const broken = `${GOOD_SECRET}  webhook.token:\n`;
      await writeAtomically(file, broken);
      await waitFor('the edit is rejected', () => store.problems().length > 0);

      const error = await notInForce(store, () => ({ delete: ['accounts.ci.tokens'] }));
      expect(error.message).to.equal(
        'svc-secret has a problem, so this change cannot take effect: stringData.webhook.token: must be a string; fix it first',
      );
      expect(await readFile(file, 'utf8')).to.equal(broken);
      expect((await readdir(dir)).sort()).to.deep.equal(['secret.yaml']);
      expect(store.current().secrets.get('svc-secret')?.data).to.include({ 'accounts.ci.tokens': 't1' });
      expect(text()).to.include('Secret svc-secret is not in force after a write; the write was undone');

      await writeAtomically(file, GOOD_SECRET);
      await store.updateSecret('svc-secret', () => ({ delete: ['accounts.ci.tokens'] }));
      expect(store.current().secrets.get('svc-secret')?.data).not.to.have.property('accounts.ci.tokens');
    });

    it('rejects when the Secret has no good version at all (non-base64 data), naming the key', async () => {
      const file = path.join(dir, 'secret.yaml');
      const broken = GOOD_SECRET.replace('\ndata:\n', '\ndata:\n  k: not*base64\n');
      await writeFile(file, broken);
      const store = await open();
      const error = await notInForce(store, () => ({ set: { 'accounts.ci.password': 'hash' } }));
      expect(error.message).to.equal(
        'svc-secret has a problem, so this change cannot take effect: data.k: is not base64 (use stringData for plain text); fix it first',
      );
      expect(await readFile(file, 'utf8')).to.equal(broken);
      expect(store.current().secrets.has('svc-secret')).to.equal(false);
    });

    it('rejects a write that changes nothing on disk while an older version is still in force', async () => {
      const file = path.join(dir, 'secret.yaml');
      await writeFile(file, GOOD_SECRET);
      const store = await open();
      // By hand: the token is removed, but a key without a value rejects the object.
      const broken = `${GOOD_SECRET.replace('  accounts.ci.tokens: t1\n', '')}  webhook.token:\n`;
      await writeAtomically(file, broken);
      await waitFor('the edit is rejected', () => store.problems().length > 0);
      await notInForce(store, () => ({ delete: ['accounts.ci.tokens'] }));
      expect(await readFile(file, 'utf8')).to.equal(broken);
      expect(store.current().secrets.get('svc-secret')?.data).to.include({ 'accounts.ci.tokens': 't1' });
    });

    it('rejects writes after close', async () => {
      const store = await open();
      await store.close();
      let error: unknown;
      await store.updateSecret('s', () => ({})).catch((err: unknown) => (error = err));
      expect((error as Error).message).to.equal('the config store is closed');
    });
  });
});
