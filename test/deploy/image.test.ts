/**
 * The image's files, read from the Dockerfile (no container engine runs here): the runtime
 * stage's copies, laid out in a directory as the image would hold them, give the server every
 * file its pages load. The list of files is the server's own (loadWebAssets) and the pages' own
 * links, not one written here.
 */
import { expect } from 'chai';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadWebAssets } from '../../src/web/assets.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const root = new URL('../../', import.meta.url).pathname;
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The runtime (last) stage's instructions, comments and blank lines left out. */
function runtimeStage(): string[] {
  const lines = read('Dockerfile').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const last = lines.map((l, i) => (l.startsWith('FROM ') ? i : -1)).filter((i) => i >= 0).pop() ?? 0;
  return lines.slice(last);
}

/** Files of the checkout a COPY source names: a path, or `dir/*.ext` (the only globs the Dockerfile uses). */
function expand(source: string): string[] {
  const star = source.indexOf('*');
  if (star < 0) return [source];
  const dir = source.slice(0, source.lastIndexOf('/', star));
  const pattern = new RegExp(`^${basename(source).replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`);
  return readdirSync(join(root, dir)).filter((name) => pattern.test(name)).map((name) => `${dir}/${name}`);
}

/** The /web/ files every page links or loads: svc's pages under web/ and the provider's pages (src/idp/login/). */
function pageAssets(): string[] {
  const texts = [...readdirSync(join(root, 'web')).filter((n) => n.endsWith('.html')).map((n) => read(`web/${n}`)), ...readdirSync(join(root, 'src/idp/login')).filter((n) => n.endsWith('.ts')).map((n) => read(`src/idp/login/${n}`))];
  const names = new Set<string>();
  for (const text of texts) for (const m of text.matchAll(/(?:href|src)="\/web\/([^"?#]+)"/g)) names.add(m[1] as string);
  return [...names].sort();
}

describe('the image (Dockerfile)', () => {
  cleanUpTempDirs();
  it('holds every file the server serves to its pages and every asset the pages load', () => {
    const stage = runtimeStage();
    const image = makeTempDir('svc-image-');
    try {
      // dist/ comes whole from the build stage, which compiles web/src/*.ts to dist/web/*.js.
      expect(stage).to.include('COPY --from=build /app/dist ./dist');
      mkdirSync(join(image, 'dist/web'), { recursive: true });
      for (const name of readdirSync(join(root, 'web/src')).filter((n) => n.endsWith('.ts'))) writeFileSync(join(image, 'dist/web', name.replace(/\.ts$/, '.js')), '');
      writeFileSync(join(image, 'package.json'), '{}');
      // The checkout's files the runtime stage copies into web/.
      for (const line of stage.filter((l) => l.startsWith('COPY ') && !l.startsWith('COPY --from'))) {
        const args = line.slice('COPY '.length).split(/\s+/);
        const dest = args.pop() ?? '';
        if (!dest.startsWith('./web')) continue;
        mkdirSync(join(image, 'web'), { recursive: true });
        for (const file of args.flatMap(expand)) copyFileSync(join(root, file), join(image, 'web', basename(file)));
      }
      const assets = loadWebAssets(image);
      expect(assets.missing.map((p) => p.slice(image.length + 1)), 'files the server looks for that the image lacks').to.deep.equal([]);
      const loaded = pageAssets();
      expect(loaded).to.include('favicon.svg');
      expect(loaded.filter((name) => assets.file(name) === undefined), 'assets the pages load that the image does not serve').to.deep.equal([]);
    } finally {
      rmSync(image, { recursive: true, force: true });
    }
  });
});
