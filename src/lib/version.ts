/**
 * svc's version, read once from its package.json: the nearest one above this file named `svc`
 * (this file runs from src/ under tsx and from dist/src/ when built, at different depths).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

export function svcVersion(): string {
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (parsed.name === 'svc' && typeof parsed.version === 'string') return (cached = parsed.version);
    }
    dir = dirname(dir);
  }
  return (cached = 'unknown');
}
