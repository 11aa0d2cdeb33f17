/**
 * @kubernetes/client-node (about 50 MiB of RSS in each process that imports it, and a second of
 * start-up: docs/benchmarks.md, memory) is loaded only by `svc-server --kube`: a server on a
 * config dir, its primary and its worker, never resolves it. A module hook in every process (the
 * workers inherit the primary's node options) reports each resolution of the library; the same
 * hook on a `--kube` start shows it would see one.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../helpers/peers.js';
import { ROOT, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs, makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

const MARK = 'KUBE-LIBRARY-RESOLVED';
const HOOK = `data:text/javascript,${encodeURIComponent(
  `import { registerHooks } from 'node:module';
registerHooks({ resolve(specifier, context, next) {
  const resolved = next(specifier, context);
  if (resolved.url.includes('/@kubernetes/client-node/')) process.stderr.write('${MARK} ' + process.pid + '\\n');
  return resolved;
} });`,
)}`;

/** Runs svc-server with `args` until `done(output)` holds or it exits (at most 60 s); the output. */
function run(args: readonly string[], done: (output: string, port: number) => Promise<boolean>): Promise<string> {
  return (async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY, ['--import', HOOK]), ...args, '--listen', `127.0.0.1:${port}`], { cwd: ROOT, env: { PATH: process.env['PATH'], HOME: process.env['HOME'] } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const end = Date.now() + 60_000;
    try {
      while (child.exitCode === null && Date.now() < end && !(await done(output, port))) await new Promise((r) => setTimeout(r, 100));
      return output;
    } finally {
      if (child.exitCode === null) {
        const closed = new Promise((r) => child.once('close', r));
        child.kill('SIGTERM');
        await closed;
      }
    }
  })();
}

describe('e2e: @kubernetes/client-node only with --kube', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let dir: string;

  before(() => {
    dir = makeTempDir('svc-kube-on-demand-');
  });
  after(() => removeTempDir(dir));

  it('a server on a config dir serves without the library resolved in any of its processes', async () => {
    let healthy = false;
    const output = await run(['--config', join(dir, 'config'), '--workers', '1'], async (_out, port) => {
      healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
      return healthy;
    });
    expect(healthy, output.slice(-2000)).to.equal(true);
    expect(output).to.not.include(MARK);
  });

  it('the hook sees the library when --kube loads it', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
    const output = await run(['--kube', '--kubeconfig', kubeconfig, '--workers', '1'], async (out) => out.includes(MARK));
    expect(output).to.include(MARK);
  });
});
