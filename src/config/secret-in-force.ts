/**
 * Whether a write to a Secret is in force after the reload that follows it.
 *
 * A write only patches the keys it means to; the loader may still reject the object for another
 * key (an operator's `webhook.token:` with no value, non-base64 `data`) and keep its last good
 * version, or reject its whole file. The write is then on disk but not in force, and a caller
 * told "done" would report a revoked token as revoked while it still works.
 */
import { Unavailable } from '../errors.js';
import type { LoadResult } from './load-dir.js';
import { formatPath, formatProblem, type ConfigProblem } from './problems.js';

/** A Secret write that did not take effect (and was undone); 503 for an HTTP client. */
export class SecretNotInForce extends Unavailable {
  constructor(
    readonly secret: string,
    readonly reasons: readonly string[],
  ) {
    super(`${secret} has a problem, so this change cannot take effect: ${reasons.join('; ')}; fix it first`);
  }
}

/**
 * Why Secret `name`, written to `file`, is not in force in `result`; an empty list if it is.
 * The reasons are the loader's own problems, relative to the object (`stringData.webhook.token:
 * must be a string`), so they never quote a value.
 */
export function secretNotInForceReasons(result: Pick<LoadResult, 'rejectedFiles' | 'rejectedObjects' | 'problems' | 'snapshot'>, name: string, file: string, kind: 'Secret' | 'ConfigMap' = 'Secret'): string[] {
  const key = `${kind}/${name}`;
  if (result.rejectedFiles.includes(file)) {
    return result.problems.filter((p) => p.source === file && p.path.length === 0).map((p) => `${file}: ${p.message}`);
  }
  const rejected = result.rejectedObjects.find((r) => r.key === key && r.file === file);
  if (rejected !== undefined) return rejected.problems.map((p) => relativeToObject(p, key));
  const loaded = kind === 'Secret' ? result.snapshot.secrets.get(name) : result.snapshot.configMaps.get(name);
  if (loaded === undefined) return [`it is not in the store after the write (${file})`];
  if (loaded.file !== file) return [`the copy in ${loaded.file} wins over the one written in ${file}`];
  return [];
}

/** `Secret/s.stringData` + `webhook.token` → `stringData.webhook.token: must be a string`. */
function relativeToObject(problem: ConfigProblem, key: string): string {
  const [first, ...rest] = problem.path;
  if (typeof first !== 'string' || !(first === key || first.startsWith(`${key}.`))) return formatProblem(problem);
  const head = first.slice(key.length + 1);
  const path = formatPath(head === '' ? rest : [head, ...rest]);
  return path === '' ? problem.message : `${path}: ${problem.message}`;
}
