/**
 * prom-client builds a key from the label object on every inc/observe, and a proxied request
 * makes five of them. The child for one label combination is made once and reused instead: the
 * values come from bounded sets (route patterns, methods, statuses, configured extension names).
 */
export interface Labelled<Child> {
  labels(...values: string[]): Child;
}

export function childCache<Child>(metric: Labelled<Child>): (...values: string[]) => Child {
  const children = new Map<string, Child>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = children.get(key);
    if (child === undefined) {
      child = metric.labels(...values);
      children.set(key, child);
    }
    return child;
  };
}
