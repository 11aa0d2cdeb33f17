/**
 * `npm test` runs scripts/install-test-deps.sh first (package.json `pretest`): a peer package
 * that is missing is installed when root runs the tests, and named (the run fails) otherwise;
 * never skipped. dpkg-query, id, apt-get, debconf-set-selections and pgrep are stand-ins on the
 * PATH here (the real apt would change this machine): dpkg-query answers from a list of
 * installed packages that the fake apt-get adds to, as dpkg's database would.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/run.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const SCRIPT = join(ROOT, 'scripts', 'install-test-deps.sh');
const PACKAGES = /PACKAGES=\(([\s\S]*?)\)\n/.exec(readFileSync(SCRIPT, 'utf8'))?.[1]?.replace(/#.*$/gm, '').split(/\s+/).filter(Boolean) ?? [];

interface Machine {
  run(): { status: number | null; stderr: string };
  aptCalls(): string[];
  installed(): string[];
}

/** A machine with every test peer installed but `missing`, as root or not; apt-get install fails when `aptFails`. */
function machine(dir: string, missing: readonly string[], options: { root: boolean; aptFails?: boolean }): Machine {
  const db = join(dir, 'installed');
  const log = join(dir, 'apt.log');
  writeFileSync(db, PACKAGES.filter((p) => !missing.includes(p)).map((p) => `${p}\n`).join(''));
  writeFileSync(log, '');
  const tool = (name: string, body: string): void => {
    writeFileSync(join(dir, name), `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  tool('dpkg-query', `grep -qx "\${@: -1}" "${db}" && printf 'install ok installed'; exit 0`);
  tool('id', `echo ${options.root ? 0 : 1000}`);
  tool('pgrep', 'exit 1'); // no other apt-get or dpkg running
  tool('debconf-set-selections', 'cat >/dev/null');
  tool('apt-get', [
    `echo "$*" >> "${log}"`,
    'for a in "$@"; do [ "$a" = install ] && installing=1; done',
    options.aptFails === true ? '[ -n "${installing:-}" ] && exit 100' : '',
    `[ -n "\${installing:-}" ] && for a in "$@"; do case "$a" in -*|install) ;; *) echo "$a" >> "${db}" ;; esac; done`,
    'exit 0',
  ].join('\n'));
  return {
    run: () => spawnSync('bash', [SCRIPT], { encoding: 'utf8', env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` } }),
    aptCalls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
    installed: () => readFileSync(db, 'utf8').split('\n').filter(Boolean),
  };
}

describe('scripts/install-test-deps.sh (npm test installs missing peers first)', () => {
  let dir = '';
  tempDirEach('svc-install-deps-', (d) => (dir = d));

  it('is the pretest step of npm test', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.pretest).to.equal('bash scripts/install-test-deps.sh');
    expect(PACKAGES).to.include.members(['redis-server', 'slapd', 'nginx', 'wrk', 'chromium', 'lemonldap-ng']);
  });

  it('does nothing when every peer is installed', () => {
    const m = machine(dir, [], { root: true });
    const { status, stderr } = m.run();
    expect(status).to.equal(0);
    expect(stderr).to.include(`all ${PACKAGES.length} packages installed`);
    expect(m.aptCalls()).to.deep.equal([]);
  });

  it('as root, installs the missing peer (only that one) without recommends, then succeeds', () => {
    const m = machine(dir, ['wrk'], { root: true });
    const { status, stderr } = m.run();
    expect(status, stderr).to.equal(0);
    expect(m.aptCalls()).to.have.length(2);
    expect(m.aptCalls()[0]).to.match(/ update$/);
    expect(m.aptCalls()[1]).to.match(/ install -y --no-install-recommends wrk$/);
    expect(m.installed()).to.include('wrk');
    expect(stderr).to.include('test dependencies: installed wrk');
  });

  it('without root, names what to install and fails (the tests do not run, none is skipped)', () => {
    const m = machine(dir, ['wrk', 'ldap-utils'], { root: false });
    const { status, stderr } = m.run();
    expect(status).to.equal(1);
    expect(stderr).to.include('test dependencies missing: ldap-utils wrk');
    expect(stderr).to.include('apt-get install -y --no-install-recommends ldap-utils wrk');
    expect(m.aptCalls()).to.deep.equal([]);
  });

  it('fails when apt-get cannot install the missing peer', () => {
    const m = machine(dir, ['wrk'], { root: true, aptFails: true });
    const { status } = m.run();
    expect(status).to.not.equal(0);
    expect(m.installed()).to.not.include('wrk');
  });
});
