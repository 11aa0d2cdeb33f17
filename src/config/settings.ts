/**
 * The machinery that turns svc-cm, svc-rbac-cm and svc-secret into one readonly settings value,
 * once per change. It knows no feature: each feature exports a SettingsSection that parses its
 * own keys, and the composition root (src/main/settings.ts) lists them, which also gives the
 * Settings type. Parsing never throws and never has side effects: every problem is collected
 * with its key path, bad entries are left out (keeping their last good version from
 * `previous`), and the good ones apply.
 */
import { RBAC_CM, SETTINGS_CM, SETTINGS_SECRET, type StoreSnapshot } from './manifests.js';
import { ConfigProblems, ProblemSink, type ConfigProblem, type ScopedSink } from './problems.js';
import { unknownCmKeyMessage } from './key-hints.js';
import type { SecretLookup } from './secret-ref.js';

/** What every section reads: the three objects' data, every secret, and where to report. */
export interface SettingsInput {
  readonly snapshot: StoreSnapshot;
  /** svc-cm's data. */
  readonly cm: Readonly<Record<string, string>>;
  /** svc-rbac-cm's data. */
  readonly rbac: Readonly<Record<string, string>>;
  /** svc-secret's data. */
  readonly secret: Readonly<Record<string, string>>;
  /** Every Secret, for `$<secret>:<key>` references. */
  readonly secrets: SecretLookup;
  readonly sink: ProblemSink;
  readonly cmSink: ScopedSink;
  readonly rbacSink: ScopedSink;
  readonly secretSink: ScopedSink;
}

/** One feature's part of the settings. */
export interface SettingsSection<T> {
  /** The svc-cm keys this section reads; a key no section claims is reported as unknown. */
  readonly ownsCmKey?: (key: string) => boolean;
  parse(input: SettingsInput, previous: T | undefined): T;
}

/** The settings value a list of sections gives: one field per section. */
export type SettingsOf<Sections> = { readonly [K in keyof Sections]: Sections[K] extends SettingsSection<infer V> ? V : never };

export interface ParsedSettings<S> {
  readonly settings: S;
  readonly problems: readonly ConfigProblem[];
  /** Lines that apply but cannot do what they seem to (src/rbac/meaning.ts); validate warns, the server logs them. */
  readonly warnings?: readonly ConfigProblem[];
}

export type SettingsParser<S> = (snapshot: StoreSnapshot, previous?: S) => ParsedSettings<S>;

export function createSettingsParser<Sections extends Readonly<Record<string, SettingsSection<unknown>>>>(sections: Sections): SettingsParser<SettingsOf<Sections>> {
  const entries = Object.entries(sections);
  const owned = (key: string) => entries.some(([, section]) => section.ownsCmKey?.(key) === true);
  return function parseSettings(snapshot, previous) {
    const sink = new ProblemSink(new Map([...snapshot.configMaps].flatMap(([name, cm]) => (cm.valueOrigins === undefined ? [] : [[name, cm.valueOrigins] as const]))));
    const input: SettingsInput = {
      snapshot,
      cm: snapshot.configMaps.get(SETTINGS_CM)?.data ?? {},
      rbac: snapshot.configMaps.get(RBAC_CM)?.data ?? {},
      secret: snapshot.secrets.get(SETTINGS_SECRET)?.data ?? {},
      secrets: snapshot.secrets,
      sink,
      cmSink: sink.scoped(SETTINGS_CM),
      rbacSink: sink.scoped(RBAC_CM),
      secretSink: sink.scoped(SETTINGS_SECRET),
    };
    for (const key of Object.keys(input.cm)) if (!owned(key)) input.cmSink.add([key], unknownCmKeyMessage(key));
    const settings: Record<string, unknown> = {};
    for (const [name, section] of entries) {
      settings[name] = section.parse(input, (previous as Readonly<Record<string, unknown>> | undefined)?.[name]);
    }
    // Every field is set just above, one per section: the mapped type holds by construction.
    return { settings: settings as SettingsOf<Sections>, problems: sink.problems, warnings: sink.warnings };
  };
}

/** For callers that want all-or-nothing: throws ConfigProblems listing every problem. */
export function strictly<S>(parse: SettingsParser<S>): (snapshot: StoreSnapshot) => S {
  return (snapshot) => {
    const { settings, problems } = parse(snapshot);
    if (problems.length > 0) throw new ConfigProblems(problems);
    return settings;
  };
}

/** What a bad value is replaced by, as the end of its problem sentence. */
export const KEPT = 'the previous value stays in force';

/**
 * The end of the sentence for a key with a default: the same words whether the server is
 * starting, running or `validate` reads the files, so the log and validate say the same thing.
 */
export function keptOrAtStart(atStart: string): string {
  return `${KEPT} (at start: ${atStart})`;
}

/** A `"true"`/`"false"` key; anything else is reported and reads as false (the safe side for insecure switches). */
export function parseFlag(value: string | undefined, sink: ScopedSink, key: string): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  sink.add([key], `must be "true" or "false", not '${value}'`);
  return false;
}
