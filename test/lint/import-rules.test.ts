/**
 * `npm run lint` runs dependency-cruiser with .dependency-cruiser.cjs: these run that same
 * configuration on small trees written here, to show each rule fails what it should (an import
 * cycle, type-only included; settings parsing reaching into a feature; Koa away from the HTTP
 * edge; a connector reaching past the shared modules; src/http reaching into a feature) and
 * passes the rest.
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

function cruise(dir: string, roots: readonly string[] = ['src']): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [DEPCRUISE, ...roots, '--config', CONFIG, '--output-type', 'err'], { cwd: dir }, (err, stdout, stderr) => {
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

  it('fails when Koa is imported outside the HTTP edge and the provider\'s web app, type-only included', async () => {
    tree(dir, { 'src/session/login.ts': "import type Koa from 'koa';\nexport type Ctx = Koa.Context;\n" });
    const { code, out } = await cruise(dir);
    expect(code).to.not.equal(0);
    expect(out).to.contain('koa-only-at-the-edge');
    expect(out).to.match(/src\/session\/login\.ts/);
  });

  it('fails when a module of the provider outside its web app imports a Koa router', async () => {
    tree(dir, { 'src/idp/storage/adapter.ts': "import Router from '@koa/router';\nexport const r = new Router();\n" });
    const { code, out } = await cruise(dir);
    expect(code).to.not.equal(0);
    expect(out).to.contain('koa-only-at-the-edge');
  });

  it('passes Koa at the HTTP edge, in the provider\'s web app and in the UI\'s routes', async () => {
    tree(dir, {
      'src/http/app.ts': "import Koa from 'koa';\nexport const app = new Koa();\n",
      'src/idp/app.ts': "import type Koa from 'koa';\nexport type A = Koa;\n",
      'src/idp/login/interactions.ts': "import Router from '@koa/router';\nexport const r = new Router();\n",
      'src/web/routes.ts': "import Router from '@koa/router';\nexport const r = new Router();\n",
    });
    const { code, out } = await cruise(dir);
    expect(out).to.contain('no dependency violations');
    expect(code).to.equal(0);
  });

  it('fails when a connector imports a module of svc other than the shared ones', async () => {
    tree(dir, {
      'connectors/ldap/ldap.ts': "import { x } from '../../src/state/state.js';\nexport const y = x;\n",
      'src/state/state.ts': 'export const x = 1;\n',
    });
    const { code, out } = await cruise(dir, ['src', 'connectors']);
    expect(code).to.not.equal(0);
    expect(out).to.contain('connectors-import-only-shared');
    expect(out).to.match(/connectors\/ldap\/ldap\.ts/);
  });

  it('passes a connector that imports the errors, the settings problems, secret references and lib/', async () => {
    tree(dir, {
      'connectors/ldap/ldap.ts':
        "import { e } from '../../src/errors.js';\nimport { p } from '../../src/config/problems.js';\nimport { z } from '../../src/config/zod-problems.js';\n" +
        "import { s } from '../../src/config/secret-ref.js';\nimport { f } from '../../src/lib/tls-fetch.js';\nexport const all = [e, p, z, s, f];\n",
      'src/errors.ts': 'export const e = 1;\n',
      'src/config/problems.ts': 'export const p = 1;\n',
      'src/config/zod-problems.ts': 'export const z = 1;\n',
      'src/config/secret-ref.ts': 'export const s = 1;\n',
      'src/lib/tls-fetch.ts': 'export const f = 1;\n',
    });
    const { code, out } = await cruise(dir, ['src', 'connectors']);
    expect(out).to.contain('no dependency violations');
    expect(code).to.equal(0);
  });

  it('fails when src/http (outside its routes) imports a feature folder, type-only included', async () => {
    tree(dir, {
      'src/http/caller.ts': "import type { Authenticator } from '../session/authenticate.js';\nexport type A = Authenticator;\n",
      'src/session/authenticate.ts': 'export interface Authenticator { known(token: string): string }\n',
    });
    const { code, out } = await cruise(dir);
    expect(code).to.not.equal(0);
    expect(out).to.contain('http-knows-no-feature');
    expect(out).to.match(/src\/http\/caller\.ts/);
  });

  it('passes a route of src/http that calls a feature', async () => {
    tree(dir, {
      'src/http/routes/session.ts': "import { login } from '../../session/login.js';\nexport const route = login;\n",
      'src/session/login.ts': 'export const login = 1;\n',
    });
    const { code, out } = await cruise(dir);
    expect(out).to.contain('no dependency violations');
    expect(code).to.equal(0);
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
