import { expect } from 'chai';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadWebAssets, packageRoot } from '../../src/web/assets.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

describe('web: the pages\' files', function () {
  cleanUpTempDirs();
  let root: string;

  beforeEach(function () {
    root = makeTempDir('svc-web-');
    writeFileSync(join(root, 'package.json'), '{}');
    mkdirSync(join(root, 'web'));
    writeFileSync(join(root, 'web', 'login.html'), '<p>login</p>');
    writeFileSync(join(root, 'web', 'style.css'), 'body{}');
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('reads HTML and CSS from web/ and scripts from dist/web/, and lists what is missing', function () {
    mkdirSync(join(root, 'dist', 'web'), { recursive: true });
    writeFileSync(join(root, 'dist', 'web', 'login.js'), 'export {}');
    const assets = loadWebAssets(root);
    expect(assets.page('login').body.toString()).to.equal('<p>login</p>');
    expect(assets.file('login.js')?.type).to.equal('text/javascript; charset=utf-8');
    expect(assets.missing.map((p) => p.slice(root.length))).to.have.members(['/web/account.html', '/web/logout.html', '/web/favicon.svg', '/dist/web/account.js', '/dist/web/api.js', '/dist/web/auto-post.js', '/dist/web/return-url.js', '/dist/web/sessions.js', '/dist/web/webauthn.js', '/dist/web/second-factor.js']);
    expect(assets.page('account').body.toString()).to.contain('run npm run build');
  });

  it('serves pages only through page(), and nothing it was not told about', function () {
    const assets = loadWebAssets(root);
    expect(assets.file('login.html')).to.equal(undefined);
    expect(assets.file('package.json')).to.equal(undefined);
    expect(assets.file('style.css')?.body.toString()).to.equal('body{}');
  });

  it('finds the package root from a directory below it', function () {
    mkdirSync(join(root, 'dist', 'src', 'web'), { recursive: true });
    expect(packageRoot(join(root, 'dist', 'src', 'web'))).to.equal(root);
  });
});
