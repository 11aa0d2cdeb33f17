/**
 * Each store comes from its own file. In the directory store, svc-cm, svc-rbac-cm, svc-secret and
 * svc-initial-admin-secret are each read only from the file named after them (`<name>.yaml` or
 * `<name>.yml`, in any folder of the store), or from a file that holds nothing else and is not
 * named after another store.
 *
 * Why: the right to edit a store is granted per file. Before, objects were taken first in path
 * order, so an editor of svc-cm.yaml could append a second document `kind: Secret, name:
 * svc-secret` with a signing key and an admin hash of their own, and svc used it (svc-cm.yaml
 * sorts first); the same with `svc-rbac-cm` and `g, me, role:admin` (issue 51, finding 3).
 *
 * A file that breaks the rule is refused whole, like a file that does not parse: its last good
 * documents stay in force (load-dir.ts), and a start with such a file is refused
 * (StoresOutsideTheirFiles). A store defined in two files that could each hold it is refused in
 * both: path order is not a permission, so neither wins. Rejected alternative: dropping only the
 * stray document and applying the rest of its file would take an edit in part, and a forged
 * store would be one line in a log among the reloads.
 *
 * The Kubernetes store needs no such rule: each of its sources is one object, read by its kind
 * and name from the API.
 */
import path from 'node:path';
import { INITIAL_ADMIN_SECRET, objectKey, RBAC_CM, SETTINGS_CM, SETTINGS_SECRET } from './manifests.js';
import { formatProblem, type ConfigProblem } from './problems.js';

/** The stores, by the key the loader files them under (`objectKey`), each with its name. */
export const STORE_OBJECTS: ReadonlyMap<string, string> = new Map([
  [`ConfigMap/${SETTINGS_CM}`, SETTINGS_CM],
  [`ConfigMap/${RBAC_CM}`, RBAC_CM],
  [`Secret/${SETTINGS_SECRET}`, SETTINGS_SECRET],
  [`Secret/${INITIAL_ADMIN_SECRET}`, INITIAL_ADMIN_SECRET],
]);

/** One document of a file that defines a store. */
interface Definition {
  readonly file: string;
  /** 1-based, counting every document of the file (an empty one too), as an editor counts `---`. */
  readonly document: number;
}

/** The store key a file is named after (`svc-cm.yaml` -> `ConfigMap/svc-cm`), if any. */
function namedAfter(file: string): string | undefined {
  const base = path.basename(file).replace(/\.ya?ml$/, '');
  for (const [key, name] of STORE_OBJECTS) if (name === base) return key;
  return undefined;
}

function describe(key: string): string {
  const [kind, name] = key.split('/');
  return `${kind ?? ''} ${name ?? ''}`;
}

/**
 * The files that break the rule, each with its problems (source: the file, no key path, as for a
 * file that does not parse); empty when every store is where it belongs. `sourceDocs` is in
 * path order; so is the result.
 */
export function storesOutsideTheirFiles(sourceDocs: ReadonlyMap<string, readonly unknown[]>): Map<string, ConfigProblem[]> {
  const refused = new Map<string, ConfigProblem[]>();
  const refuse = (file: string, message: string) => {
    const problems = refused.get(file) ?? [];
    problems.push({ source: file, path: [], message });
    refused.set(file, problems);
  };
  const placed = new Map<string, Definition[]>();
  for (const [file, docs] of sourceDocs) {
    const own = namedAfter(file);
    const alone = docs.filter((doc) => doc !== null && doc !== undefined).length === 1;
    docs.forEach((doc, index) => {
      const key = objectKey(doc);
      const name = key === undefined ? undefined : STORE_OBJECTS.get(key);
      if (key === undefined || name === undefined) return;
      if (own === undefined ? !alone : own !== key) {
        refuse(file, `document ${index + 1} defines ${describe(key)}, which is read only from ${name}.yaml (or .yml) or from a file that holds nothing else and is not named after another store; this file is not used`);
      } else {
        placed.set(key, [...(placed.get(key) ?? []), { file, document: index + 1 }]);
      }
    });
  }
  for (const [key, definitions] of placed) {
    const files = [...new Set(definitions.map((d) => d.file))];
    if (files.length < 2) continue; // twice in its own file: the loader's duplicate rule (the first wins)
    for (const { file, document } of definitions) {
      const others = files.filter((f) => f !== file).join(', ');
      refuse(file, `document ${document} defines ${describe(key)}, which is also defined in ${others}; a store is read from one file only, so none of them is used`);
    }
  }
  return new Map([...sourceDocs.keys()].filter((file) => refused.has(file)).map((file) => [file, refused.get(file) ?? []]));
}

/** A start refused: a store is defined outside its own file (the problems say which, where). */
export class StoresOutsideTheirFiles extends Error {
  constructor(
    readonly dir: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    super(`${dir}: a store is defined outside its own file, so this configuration is refused (docs/config-store.md): ${problems.map(formatProblem).join('; ')}`);
    this.name = 'StoresOutsideTheirFiles';
  }
}

/** Refuses a load in which any store is defined outside its own file. */
export function refuseStoresOutsideTheirFiles(dir: string, load: { readonly misplacedStores: readonly ConfigProblem[] }): void {
  if (load.misplacedStores.length > 0) throw new StoresOutsideTheirFiles(dir, load.misplacedStores);
}
