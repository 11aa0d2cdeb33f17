/**
 * `npm run lint` runs dependency-cruiser with .dependency-cruiser.cjs: these run that same
 * configuration on small trees written here, to show each rule fails what it should (an import
 * cycle, type-only included; settings parsing reaching into a feature) and passes the rest.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ROOT } from '../helpers/run.js';
import { tempDirEach } from '../helpers/temp-dir.js';

const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise'); // the bin's name, stable across majors (its file is not)
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');

function tree(dir: string, files: Record<string, string>): void {
  writeFileSync(join(dir, 'tsconfig.test.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true } }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

function cruise(dir: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'err'], { cwd: dir }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : Number((err as { code?: number }).code ?? 1), out: stdout + stderr });
    });
  });
}

describe('lint: import rules (dependency-cruiser)', function () {
  this.timeout(30_000);
  let dir = '';
  tempDirEach('svc-lint-', (d) => (dir = d));

  it('fails on an import cycle made only of type imports, naming the modules', async () => {
    tree(dir, {
      'src/a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      'src/b.ts': "import type { A } from './a.js';\nexport interface B { a?: A }\n",
    });
    const { code, out } = await cruise(dir);
    expect(code).to.not.equal(0);
    expect(out).to.contain('no-circular');
    expect(out).to.match(/src\/a\.ts/);
  });

  it('fails when src/config/ imports a feature folder', async () => {
    tree(dir, {
      'src/config/settings.ts': "import { x } from '../accounts/config.js';\nexport const y = x;\n",
      'src/accounts/config.ts': 'export const x = 1;\n',
    });
    const { code, out } = await cruise(dir);
    expect(code).to.not.equal(0);
    expect(out).to.contain('config-knows-no-feature');
  });

  it('passes a tree whose imports go one way', async () => {
    tree(dir, {
      'src/accounts/config.ts': "import { ok } from '../config/settings.js';\nexport const x = ok;\n",
      'src/config/settings.ts': 'export const ok = 1;\n',
    });
    const { code, out } = await cruise(dir);
    expect(out).to.contain('no dependency violations');
    expect(code).to.equal(0);
  });
});
