/**
 * The Settings in force: parsed from the store at start and again on every store change.
 * Readers call current() and get one whole Settings value; a change that brings problems logs
 * each new one with its key path and keeps the last good version of every bad entry.
 */
import type { Logger } from 'pino';
import { formatProblem, type ConfigProblem } from './problems.js';
import type { SettingsParser } from './settings.js';
import type { ConfigStore } from './store.js';

export interface LiveSettings<S> {
  current(): S;
  problems(): readonly ConfigProblem[];
  onChange(listener: (settings: S, previous: S) => void): () => void;
  close(): void;
}

export function createLiveSettings<S>(store: ConfigStore, parseSettings: SettingsParser<S>, log: Logger): LiveSettings<S> {
  let { settings, problems, warnings = [] } = parseSettings(store.current());
  logNewProblems(problems, [], log);
  logNewProblems(warnings, [], log, 'warning');
  const listeners = new Set<(settings: S, previous: S) => void>();

  const unsubscribe = store.onChange((snapshot) => {
    const previous = settings;
    const parsed = parseSettings(snapshot, previous);
    settings = parsed.settings;
    logNewProblems(parsed.problems, problems, log);
    logNewProblems(parsed.warnings ?? [], warnings, log, 'warning');
    problems = parsed.problems;
    warnings = parsed.warnings ?? [];
    log.info({ problems: problems.length }, 'configuration change applied');
    for (const listener of listeners) {
      try {
        listener(settings, previous);
      } catch (err: unknown) {
        log.error({ err }, 'a settings listener failed');
      }
    }
  });

  return {
    current: () => settings,
    problems: () => problems,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: unsubscribe,
  };
}

/**
 * Each problem once, when it appears: every token or password write reloads the store, and a
 * standing problem repeated on each would bury the new ones. The count on every change says
 * how many stand.
 */
function logNewProblems(problems: readonly ConfigProblem[], before: readonly ConfigProblem[], log: Logger, kind: 'problem' | 'warning' = 'problem'): void {
  const known = new Set(before.map(formatProblem));
  for (const problem of problems) {
    const text = formatProblem(problem);
    if (!known.has(text)) log.warn({ source: problem.source }, `configuration ${kind}: ${text}`);
  }
}
