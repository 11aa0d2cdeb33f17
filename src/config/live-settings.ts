/**
 * The Settings in force: parsed from the store at start and again on every store change.
 * Readers call current() and get one whole Settings value; a change that brings problems logs
 * each of them with its key path and keeps the last good version of every bad entry.
 */
import type { Logger } from 'pino';
import { formatProblem, type ConfigProblem } from './problems.js';
import { parseSettings, type Settings } from './settings.js';
import type { ConfigStore } from './store.js';

export interface LiveSettings {
  current(): Settings;
  problems(): readonly ConfigProblem[];
  onChange(listener: (settings: Settings, previous: Settings) => void): () => void;
  close(): void;
}

export function createLiveSettings(store: ConfigStore, log: Logger): LiveSettings {
  let { settings, problems } = parseSettings(store.current());
  logProblems(problems, log);
  const listeners = new Set<(settings: Settings, previous: Settings) => void>();

  const unsubscribe = store.onChange((snapshot) => {
    const previous = settings;
    const parsed = parseSettings(snapshot, previous);
    settings = parsed.settings;
    problems = parsed.problems;
    logProblems(problems, log);
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

function logProblems(problems: readonly ConfigProblem[], log: Logger): void {
  for (const problem of problems) log.warn({ source: problem.source }, `configuration problem: ${formatProblem(problem)}`);
}
