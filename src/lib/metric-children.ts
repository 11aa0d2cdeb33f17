/**
 * prom-client builds a key from the label object on every inc/observe, and a proxied request
 * makes several. The child for one label combination is made once and reused instead: the
 * values come from bounded sets (route patterns, methods, statuses, configured extension names).
 * Looked up through one Map level per label, so a hit allocates nothing (no joined key string).
 */
export interface Labelled<Child> {
  labels(...values: string[]): Child;
}

type Level<Child> = Map<string, Level<Child> | Child>;

export function childCache<Child>(metric: Labelled<Child>): (...values: string[]) => Child {
  const root: Level<Child> = new Map();
  return (...values) => {
    let level = root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i] as string;
      let next = level.get(value) as Level<Child> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(value, next);
      }
      level = next;
    }
    const leafKey = values[last] ?? '';
    let child = level.get(leafKey) as Child | undefined;
    if (child === undefined) {
      child = metric.labels(...values);
      level.set(leafKey, child);
    }
    return child;
  };
}
