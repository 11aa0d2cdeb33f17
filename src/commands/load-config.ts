/** What `svc-server validate` and `rbac can` share: a config dir read once, opening nothing else. */
import { statSync } from 'node:fs';
import { EMPTY_MEMORY, loadDirectory } from '../config/load-dir.js';
import { RBAC_CM } from '../config/manifests.js';
import { parseSettings } from '../main/settings.js';

export async function loadProblemsAndSettings(dir: string) {
  const loaded = await loadDirectory(dir, EMPTY_MEMORY);
  const { settings, problems, warnings = [] } = parseSettings(loaded.snapshot);
  // What could hold the policy but was not read: any file that does not parse, and a rejected svc-rbac-cm.
  const unread = [
    ...loaded.rejectedFiles.map((file) => ({ what: file, problems: loaded.problems.filter((p) => p.source === file) })),
    ...loaded.rejectedObjects.filter((r) => r.key === `ConfigMap/${RBAC_CM}`).map((r) => ({ what: r.key, problems: r.problems })),
  ];
  return { settings, problems: [...loaded.problems, ...problems], warnings, unread };
}

/** Why `dir` cannot be a config dir (missing, or a file), or undefined when it can. */
export function notADirectory(dir: string): string | undefined {
  try {
    return statSync(dir).isDirectory() ? undefined : `${dir}: not a directory`;
  } catch {
    return `${dir}: no such directory`;
  }
}

