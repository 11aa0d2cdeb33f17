/**
 * Whether this replica has applied what its configuration store holds, whole (issue 52).
 *
 * A running replica that sees a bad edit keeps the last good version of each bad entry, as every
 * replica running beside it does (live-settings.ts), and stays ready. A replica that starts on a
 * store with a problem has no last good version: parsing puts a default in place of each bad
 * value (the default rights, no account for a svc-cm that does not parse, another `url`), and
 * serving that made it diverge from the replicas that kept theirs. So it serves nothing: /readyz
 * answers 503 naming the store, the key and a category of what is wrong, every other route 503
 * with the same sentence, and a rollout with a bad edit stalls while the old pods keep serving.
 * Those answers go to anyone, so they never carry a problem's own text, which quotes values (an
 * RBAC line verbatim, a `url`): the log has that, once per distinct set of problems. It keeps watching, and
 * the first load without a problem applies the configuration; from then on it is a running
 * replica like the others.
 *
 * Rejected: starting on the last configuration the replicas share. svc keeps no copy of it
 * anywhere but in the running processes, and a replica that starts alone has none to read.
 */
import { Gauge, type Registry } from 'prom-client';
import { formatProblem, type ConfigProblem } from '../config/problems.js';
import type { LiveSettings } from '../config/live-settings.js';
import type { ConfigStore } from '../config/store.js';

export interface StartGate {
  /** Why the store's configuration is not applied yet, fit for anyone (publicProblem); undefined once it was, whole (then for good). */
  reason(): string | undefined;
  /** Resolves once the configuration was applied whole: at once when the store had no problem at start. */
  readonly applied: Promise<void>;
  close(): void;
}

export interface StartGateDeps {
  readonly store: Pick<ConfigStore, 'problems' | 'onLoad'>;
  readonly settings: Pick<LiveSettings<unknown>, 'problems' | 'onChange'>;
  /** What the gate says: a pino Logger, narrowed to the two calls it makes. */
  readonly log: { error(fields: object, msg: string): void; info(msg: string): void };
}

/** The sentence before the problems, in /readyz, in every refused request and in the log. */
export const NOT_APPLIED = 'this replica started on a configuration it cannot apply, so it serves nothing until the store is fixed (the replicas that run keep their last good configuration)';

/** After the problems in a public answer: where the rest is. */
export const DETAILS_IN_LOG = "this replica's log says what is wrong with each";

/**
 * A problem as anyone may read it: its store, its key path and one of a few fixed categories,
 * never its message, which quotes values. A message not recognised reads as `invalid value`.
 */
export function publicProblem(problem: ConfigProblem): string {
  return formatProblem({ ...problem, message: problemCategory(problem) });
}

function problemCategory({ path, message }: ConfigProblem): string {
  if (/\bdoes not parse\b/.test(message)) return 'does not parse';
  if (/^cannot be read\b/.test(message)) return 'cannot be read';
  if (/^unknown key\b/.test(message)) return 'unknown key';
  if (/^is missing\b|\bis required\b/.test(message)) return 'missing';
  return path.length === 0 ? 'cannot be used' : 'invalid value';
}

export function createStartGate({ store, settings, log }: StartGateDeps): StartGate {
  /** The public reason while shut, '' once open. */
  let waiting: string | undefined;
  /** The full sentence last logged. */
  let seen: string | undefined;
  let resolveApplied: () => void = () => undefined;
  const applied = new Promise<void>((resolve) => (resolveApplied = resolve));
  const unsubscribe: (() => unknown)[] = [];

  /** Reads the problems standing now; the first time there are none, the gate opens for good. */
  const check = (): void => {
    if (waiting === '') return;
    const standing = [...(store.problems?.() ?? []), ...settings.problems()];
    if (standing.length === 0) {
      if (waiting !== undefined) log.info('configuration applied: the store no longer holds a problem; this replica is ready');
      waiting = '';
      for (const stop of unsubscribe) stop();
      resolveApplied();
      return;
    }
    const problems = standing.map(formatProblem);
    const logged = `${NOT_APPLIED}: ${problems.join('; ')}`;
    // Once per distinct set of problems: every store load checks again, and the same sentence on each would bury the rest.
    if (logged !== seen) log.error({ problems }, logged);
    seen = logged;
    waiting = `${NOT_APPLIED}: ${standing.map(publicProblem).join('; ')} (${DETAILS_IN_LOG})`;
  };

  check();
  if (waiting !== '') {
    unsubscribe.push(settings.onChange(check));
    if (store.onLoad !== undefined) unsubscribe.push(store.onLoad(check));
  }
  return {
    reason: () => (waiting === '' ? undefined : waiting),
    applied,
    close: () => {
      for (const stop of unsubscribe) stop();
    },
  };
}

/** svc_config_applied: 0 while this replica waits for a configuration it can apply; the alert reads it (docs/operations.md). */
export function registerStartGateMetric(registry: Registry, gate: Pick<StartGate, 'reason'>): void {
  new Gauge({
    name: 'svc_config_applied',
    help: 'Whether this replica applied what its configuration store holds (1), or started on a problem and serves nothing until the store is fixed (0); /readyz and the log name the problem',
    registers: [registry],
    aggregator: 'min',
    collect() {
      this.set(gate.reason() === undefined ? 1 : 0);
    },
  });
}
