/**
 * scripts/ensure-built.mjs (`npm start`'s prestart, `npm ci`'s prepare) where TypeScript is not
 * installed, as after `npm ci --omit=dev`: a built dist/ starts, a missing or stale one is refused
 * with what to run, and the install itself is not failed. The script runs as npm runs it, in a
 * package directory of its own that has no node_modules.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decide, ENTRY, INCREMENTAL } from '../../scripts/ensure-built.mjs';
import { ROOT } from '../helpers/run.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const script = new URL('../../scripts/ensure-built.mjs', import.meta.url).pathname;

interface Package {
  readonly dir: string;
  run(...args: string[]): { status: number | null; stderr: string };
  close(): void;
}

/** A package directory with sources (unless `sources` is false) and, when `built`, a dist/ built at `builtAt`. */
function packageDir(options: { sources: boolean; built: boolean; sourcesAt?: Date; builtAt?: Date }): Package {
  const dir = makeTempDir('svc-ensure-built-');
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(script, join(dir, 'scripts/ensure-built.mjs'));
  if (options.sources) {
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src/main.ts'), 'export {};\n');
    const at = options.sourcesAt ?? new Date('2026-01-01T00:00:00Z');
    utimesSync(join(dir, 'src/main.ts'), at, at);
  }
  if (options.built) {
    mkdirSync(join(dir, 'dist/src/commands'), { recursive: true });
    writeFileSync(join(dir, ENTRY), '');
    writeFileSync(join(dir, 'dist/.built'), '');
    const at = options.builtAt ?? new Date('2026-02-01T00:00:00Z');
    utimesSync(join(dir, 'dist/.built'), at, at);
  }
  return {
    dir,
    run: (...args) => {
      const result = spawnSync(process.execPath, ['scripts/ensure-built.mjs', ...args], { cwd: dir, encoding: 'utf8' });
      return { status: result.status, stderr: result.stderr };
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

describe('scripts/ensure-built.mjs without TypeScript', () => {
  cleanUpTempDirs();
  it('starts a built dist/ that is newer than the sources, saying nothing', () => {
    const pkg = packageDir({ sources: true, built: true });
    try {
      expect(pkg.run()).to.deep.equal({ status: 0, stderr: '' });
    } finally {
      pkg.close();
    }
  });

  it('starts a built dist/ copied without its sources (a production copy)', () => {
    const pkg = packageDir({ sources: false, built: true });
    try {
      expect(pkg.run()).to.deep.equal({ status: 0, stderr: '' });
    } finally {
      pkg.close();
    }
  });

  it('refuses to start without dist/, naming what is missing and what to run', () => {
    const pkg = packageDir({ sources: true, built: false });
    try {
      expect(pkg.run()).to.deep.equal({
        status: 1,
        stderr: 'svc: cannot start: dist/src/commands/svc-server.js is missing, and TypeScript (a dev dependency) is not installed to build it: run `npm ci` (with dev dependencies) and `npm run build`, or install with a dist/ built elsewhere (`npm run build` there, then copy dist/)\n',
      });
    } finally {
      pkg.close();
    }
  });

  it('refuses to start a dist/ older than the sources rather than run stale code', () => {
    const pkg = packageDir({ sources: true, built: true, sourcesAt: new Date('2026-03-01T00:00:00Z') });
    try {
      const { status, stderr } = pkg.run();
      expect(status).to.equal(1);
      expect(stderr).to.match(/^svc: cannot start: dist\/ is older than the sources, and TypeScript \(a dev dependency\) is not installed/);
    } finally {
      pkg.close();
    }
  });

  it('as the install\'s prepare step (--if-possible), says it is not built and lets the install finish', () => {
    const pkg = packageDir({ sources: true, built: false });
    try {
      const { status, stderr } = pkg.run('--if-possible');
      expect(status).to.equal(0);
      expect(stderr).to.match(/^svc: not built: dist\/src\/commands\/svc-server\.js is missing, and TypeScript/);
    } finally {
      pkg.close();
    }
  });

  it('decide(): builds when stale and TypeScript is there, runs when current', () => {
    expect(decide({ entryExists: true, newestSource: 1, builtAt: 2, hasTypescript: false })).to.deep.equal({ action: 'run' });
    expect(decide({ entryExists: true, newestSource: 3, builtAt: 2, hasTypescript: true })).to.deep.equal({ action: 'build', why: 'dist/ is older than the sources' });
    expect(decide({ entryExists: false, newestSource: 0, builtAt: 0, hasTypescript: true })).to.deep.equal({ action: 'build', why: `${ENTRY} is missing` });
  });
});

describe('scripts/ensure-built.mjs with TypeScript', () => {
  cleanUpTempDirs();

  it('builds the server incrementally, its build info inside dist/ (removed with it); npm run build the same', function () {
    this.timeout(60_000); // two runs of tsc, on two cores that run other test files
    const dir = makeTempDir('svc-ensure-built-ts-');
    mkdirSync(join(dir, 'scripts'));
    copyFileSync(script, join(dir, 'scripts/ensure-built.mjs'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { outDir: 'dist', rootDir: '.', module: 'nodenext', target: 'es2022', types: [], skipLibCheck: true }, include: ['src/**/*'] }));
    mkdirSync(join(dir, 'web/src'), { recursive: true });
    writeFileSync(join(dir, 'web/tsconfig.json'), JSON.stringify({ compilerOptions: { outDir: '../dist/web', rootDir: 'src', types: [], skipLibCheck: true }, include: ['src/**/*'] }));
    writeFileSync(join(dir, 'web/src/page.ts'), 'export const page = 1;\n');
    mkdirSync(join(dir, 'src/commands'), { recursive: true });
    mkdirSync(join(dir, 'src/cli'));
    writeFileSync(join(dir, 'src/cli/main.ts'), 'export {};\n');
    writeFileSync(join(dir, 'src/commands/svc-server.ts'), 'export const answer: number = 1;\n');
    expect(spawnSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: dir, encoding: 'utf8' }).status).to.equal(0);
    expect(readFileSync(join(dir, ENTRY), 'utf8')).to.contain('answer = 1');
    expect(existsSync(join(dir, 'dist/.tsbuildinfo')), 'the build info, in dist/').to.equal(true);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['build']).to.match(new RegExp(`^tsc -p tsconfig\\.json ${INCREMENTAL.join(' ').replace(/\./g, '\\.')} && `));
  });
});
