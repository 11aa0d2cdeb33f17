/**
 * The audit events of configuration changes: `config-applied` for each ConfigMap or Secret whose
 * content changed and parsed cleanly, `config-refused` for each one whose change brought problems
 * (entries or whole files refused; the last good version stays in force). A ConfigMap is named
 * with a short hash of its old and new content, so an auditor can tell which text was in force;
 * a Secret only with the names of the keys that changed, never a hash of its values (a hash of a
 * guessable secret gives it away).
 */
import { createHash } from 'node:crypto';
import type { AuditTrail } from '../audit/trail.js';
import type { StoreSnapshot } from './manifests.js';
import { formatProblem, type ConfigProblem } from './problems.js';
import type { ConfigStore } from './store.js';

/** At most this many problems are named in one event (the log has every one). */
const MAX_PROBLEMS_NAMED = 10;

export interface ConfigAuditSources {
  readonly store: Pick<ConfigStore, 'current' | 'onChange' | 'problems' | 'onLoad'>;
  /** The settings' problems now (read after they parsed the change). */
  readonly settingsProblems: () => readonly ConfigProblem[];
}

/** Starts recording; returns the function that stops. */
export function auditConfigChanges({ store, settingsProblems }: ConfigAuditSources, audit: AuditTrail): () => void {
  let previous = store.current();
  let known = new Set(allProblems().map(formatProblem));
  function allProblems(): ConfigProblem[] {
    return [...(store.problems?.() ?? []), ...settingsProblems()];
  }
  function afterLoad(): void {
    const now = allProblems();
    const fresh = now.filter((p) => !known.has(formatProblem(p)));
    known = new Set(now.map(formatProblem));
    const next = store.current();
    const told = new Set<ConfigProblem>();
    for (const change of next === previous ? [] : changedObjects(previous, next)) {
      const problems = fresh.filter((p) => p.source === change.name || p.source === change.file);
      for (const p of problems) told.add(p);
      record(audit, `${change.kind}/${change.name}`, change.details, problems);
    }
    previous = next;
    // A file or object refused whole leaves the snapshot as it was: only its problems tell.
    const bySource = new Map<string, ConfigProblem[]>();
    for (const p of fresh) if (!told.has(p)) bySource.set(p.source, [...(bySource.get(p.source) ?? []), p]);
    for (const [source, problems] of bySource) record(audit, source, {}, problems);
  }
  // The settings parse a change in their own listener, registered before this one: their problems are current here.
  return store.onLoad?.(afterLoad) ?? store.onChange(afterLoad);
}

function record(audit: AuditTrail, object: string, details: ObjectChange['details'], problems: readonly ConfigProblem[]): void {
  const refused = problems.length > 0;
  audit.record({
    category: 'configuration',
    type: 'change',
    action: refused ? 'config-refused' : 'config-applied',
    outcome: refused ? 'failure' : 'success',
    ...(refused ? { reason: reasonOf(problems) } : {}),
    svc: { object, ...details, ...(refused ? { problems: problems.slice(0, MAX_PROBLEMS_NAMED).map(formatProblem) } : {}) },
  });
}

function reasonOf(problems: readonly ConfigProblem[]): string {
  const named = problems.slice(0, 3).map(formatProblem).join('; ');
  return problems.length > 3 ? `${named}; and ${problems.length - 3} more` : named;
}

interface ObjectChange {
  readonly kind: 'ConfigMap' | 'Secret';
  readonly name: string;
  readonly file: string;
  readonly details: Readonly<Record<string, string | readonly string[]>>;
}

function changedObjects(before: StoreSnapshot, after: StoreSnapshot): ObjectChange[] {
  const changes: ObjectChange[] = [];
  for (const name of new Set([...before.configMaps.keys(), ...after.configMaps.keys()])) {
    const old = before.configMaps.get(name);
    const now = after.configMaps.get(name);
    const [oldHash, newHash] = [contentHash(old?.data), contentHash(now?.data)];
    if (oldHash !== newHash) changes.push({ kind: 'ConfigMap', name, file: now?.file ?? old?.file ?? '', details: { oldHash, newHash } });
  }
  for (const name of new Set([...before.secrets.keys(), ...after.secrets.keys()])) {
    const old = before.secrets.get(name)?.data ?? {};
    const now = after.secrets.get(name)?.data ?? {};
    const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].filter((k) => old[k] !== now[k]).sort();
    if (keys.length > 0) changes.push({ kind: 'Secret', name, file: after.secrets.get(name)?.file ?? '', details: { changedKeys: keys } });
  }
  return changes;
}

/** sha256 of the data, keys sorted, first 16 hex digits; 'none' for an object that is not there. */
export function contentHash(data: Readonly<Record<string, string>> | undefined): string {
  if (data === undefined) return 'none';
  const sorted = Object.keys(data).sort().map((k) => [k, data[k]]);
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 16);
}
