/**
 * The files of the login and account pages (docs/ui.md): HTML and CSS are committed under
 * `web/` and served as they are; the scripts are compiled from `web/src/*.ts` into `dist/web/`
 * by `npm run build`. Only the files named here are served (no path ever reaches the disk), and
 * they are read once at start: they are small, and a page never changes under a running server.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type PageName = 'login' | 'account' | 'logout';

export interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

export interface WebAssets {
  page(name: PageName): Asset;
  /** A file under /web/, or undefined when it is not one of the pages' files. */
  file(name: string): Asset | undefined;
  /** Files that were expected and not found (the scripts before a build), for the log at start. */
  readonly missing: readonly string[];
}

const PAGES: Readonly<Record<PageName, string>> = { login: 'login.html', account: 'account.html', logout: 'logout.html' };
const STATIC = ['style.css', 'favicon.svg'] as const;
/** The compiled scripts (web/src/<name>.ts). */
const SCRIPTS = ['login.js', 'account.js', 'api.js', 'auto-post.js', 'return-url.js', 'sessions.js', 'webauthn.js', 'second-factor.js'] as const;

const TYPES: Readonly<Record<string, string>> = { html: 'text/html; charset=utf-8', css: 'text/css; charset=utf-8', js: 'text/javascript; charset=utf-8', svg: 'image/svg+xml' };

/** The checkout or package root: the nearest directory above this module holding package.json. */
export function packageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
  return dir;
}

export function loadWebAssets(root: string = packageRoot()): WebAssets {
  const missing: string[] = [];
  const files = new Map<string, Asset>();
  const read = (name: string, path: string): void => {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    try {
      files.set(name, { type: TYPES[ext] ?? 'application/octet-stream', body: readFileSync(path) });
    } catch (err: unknown) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      missing.push(path);
    }
  };
  for (const name of [...Object.values(PAGES), ...STATIC]) read(name, join(root, 'web', name));
  for (const name of SCRIPTS) read(name, join(root, 'dist', 'web', name));
  const unbuilt: Asset = { type: TYPES['html'] as string, body: Buffer.from('<!doctype html><title>svc</title><p>The web pages are not built: run npm run build.</p>') };
  return {
    page: (name) => files.get(PAGES[name]) ?? unbuilt,
    file: (name) => (Object.values(PAGES).includes(name) ? undefined : files.get(name)),
    missing,
  };
}
