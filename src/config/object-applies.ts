/**
 * When each ConfigMap and Secret of the store was last taken into force: at start for every
 * object there, then each time an object's content in force changes. A file or object the store
 * refuses (YAML that does not parse, a file it cannot read, a malformed object) keeps its last
 * good version in force, so its time does not move: "the running configuration is not what is
 * on disk" shows as a file newer than its object's time, with svc_config_problems above 0.
 * A change with some refused keys still moves it: its good keys do apply.
 */
import type { StoreSnapshot } from './manifests.js';

export interface ObjectApply {
  readonly kind: 'ConfigMap' | 'Secret';
  readonly name: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
}

export interface ObjectApplies {
  /** Records a snapshot now in force; objects whose content changed (or appeared) get `now`. */
  record(snapshot: StoreSnapshot, now: number): void;
  /** The objects in force, each with when it was last applied. */
  current(): readonly ObjectApply[];
}

export function createObjectApplies(): ObjectApplies {
  const seen = new Map<string, { readonly fingerprint: string; readonly apply: ObjectApply }>();
  return {
    record(snapshot, now) {
      const present = new Set<string>();
      const objects = [
        ...[...snapshot.configMaps.values()].map((o) => ({ kind: 'ConfigMap' as const, name: o.name, content: o.data })),
        ...[...snapshot.secrets.values()].map((o) => ({ kind: 'Secret' as const, name: o.name, content: { data: o.data, labels: o.labels } })),
      ];
      for (const { kind, name, content } of objects) {
        const key = `${kind}/${name}`;
        present.add(key);
        // Content only, not the file or the value positions: moving a key within its file is no change.
        const fingerprint = JSON.stringify(content);
        if (seen.get(key)?.fingerprint !== fingerprint) seen.set(key, { fingerprint, apply: { kind, name, at: now } });
      }
      for (const key of seen.keys()) if (!present.has(key)) seen.delete(key);
    },
    current: () => [...seen.values()].map((s) => s.apply),
  };
}
