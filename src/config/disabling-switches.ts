/**
 * The svc-cm keys that turn something off. A refused value of any key keeps its last good value
 * (DESIGN §2), but for these the last good value is the more open one whenever the operator
 * meant to close something (`admin.enabled: "no"` leaves admin able to log in). Logging it is
 * not enough: /readyz fails naming the key, and `svc-server validate` exits 1, until it is fixed.
 *
 * One list: a future switch (`users.mfa.required`) is one more entry here.
 * Not listed: `oidc.tls.insecure.skip.verify` and the like turn something on, and a refused
 * value of those already reads as the safe "false".
 */
import { formatProblem, type ConfigProblem, type PathSegment } from './problems.js';
import { SETTINGS_CM } from './manifests.js';

export interface DisablingSwitch {
  /** The svc-cm data keys it covers. */
  readonly key: RegExp;
  /** Inside a YAML key (`extension.config`), the path to the switch below the data key; absent: the data key itself. */
  readonly inner?: (path: readonly PathSegment[]) => boolean;
  /** What it turns off, for readers of this list. */
  readonly turnsOff: string;
}

export const DISABLING_SWITCHES: readonly DisablingSwitch[] = [
  { key: /^admin\.enabled$/, turnsOff: 'the built-in admin account' },
  // Also an enabled key for an account that has no capabilities key: most likely a misspelt name,
  // so the account meant stays enabled.
  { key: /^accounts\..+\.enabled$/, turnsOff: 'a local account (admin too)' },
  // `enabled: "no"` (a string) keeps the extension's last good, enabled, version.
  { key: /^extension\.config$/, inner: (path) => path.length === 3 && path[0] === 'extensions' && path[2] === 'enabled', turnsOff: 'an extension' },
];

/** The problems that refused a disabling switch: each means more stays on than svc-cm says. */
export function refusedDisablingSwitches(problems: readonly ConfigProblem[]): readonly ConfigProblem[] {
  return problems.filter((p) => {
    const [key, ...inner] = p.path;
    if (p.source !== SETTINGS_CM || typeof key !== 'string') return false;
    return DISABLING_SWITCHES.some((s) => s.key.test(key) && (s.inner === undefined ? inner.length === 0 : s.inner(inner)));
  });
}

/**
 * The readiness sentence for refused switches; undefined when none is refused. `format` writes
 * each problem: /readyz passes one that leaves the refused value out, since anyone reads it.
 */
export function refusedSwitchesReason(problems: readonly ConfigProblem[], format: (problem: ConfigProblem) => string = formatProblem): string | undefined {
  const refused = refusedDisablingSwitches(problems);
  if (refused.length === 0) return undefined;
  return `a switch that turns something off was refused, so more stays on than svc-cm says: ${refused.map(format).join('; ')}`;
}
