/**
 * Each test file's wall time, so that anyone can see where the suite's time goes: the reporter
 * (summary-reporter.cjs) writes them to .tmp/suite-times.json and prints the slowest at the end.
 *
 * In parallel mode a worker sends its file's events to mocha's process only once the file has
 * ended, so the reporter cannot time a file from them: this root hook plugin (.mocharc.json
 * `require`, loaded in each worker, where the root hooks run once per file) times it from the
 * root `before all`, which runs before the file's own hooks start its peers, to the root `after
 * all`, after the file's own have stopped them, and appends one line to the run's list
 * (`SVC_SUITE_TIMES`, named by the reporter). In serial mode the root hooks run once for the whole
 * run, so the plugin records nothing and the reporter times each file from mocha's suite events,
 * which then arrive as they happen. What neither sees: the import of the file itself.
 */
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Context } from 'mocha';
import { ROOT } from './helpers/run.js';

/** The environment variable naming the file the workers append their times to. */
export const TIMES_VARIABLE = 'SVC_SUITE_TIMES';

export interface FileTime {
  /** Relative to the checkout. */
  readonly file: string;
  readonly ms: number;
}

/** One line of the run's list, as a worker appends it. */
export function timeLine(file: string, ms: number): string {
  return `${JSON.stringify({ file: relative(ROOT, file), ms })}\n`;
}

/** The lines the workers appended; a line cut short (a worker killed mid-write) is left out. */
export function parseTimeLines(text: string): FileTime[] {
  const times: FileTime[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as Partial<FileTime>;
      if (typeof value.file === 'string' && typeof value.ms === 'number' && Number.isFinite(value.ms)) times.push({ file: value.file, ms: value.ms });
    } catch {
      // a partial line: nothing to time
    }
  }
  return times;
}

/** Slowest first; a file run twice (mocha's --watch, a retried worker) counts its runs together. */
export function bySlowest(times: readonly FileTime[]): FileTime[] {
  const sums = new Map<string, number>();
  for (const { file, ms } of times) sums.set(file, (sums.get(file) ?? 0) + ms);
  return [...sums].map(([file, ms]) => ({ file, ms })).sort((a, b) => b.ms - a.ms || a.file.localeCompare(b.file));
}

/** The lines the reporter prints: the `count` slowest files, each with its seconds and share of the files' sum. */
export function slowestReport(times: readonly FileTime[], count: number): string {
  const sorted = bySlowest(times);
  const total = sorted.reduce((sum, t) => sum + t.ms, 0);
  const shown = sorted.slice(0, count);
  const width = Math.max(0, ...shown.map((t) => (t.ms / 1000).toFixed(1).length));
  const rows = shown.map((t) => `  ${(t.ms / 1000).toFixed(1).padStart(width)} s  ${total === 0 ? '  0' : String(Math.round((100 * t.ms) / total)).padStart(3)} %  ${t.file}`);
  return [`The ${shown.length} slowest of ${sorted.length} files (${(total / 1000).toFixed(1)} s summed over the files):`, ...rows].join('\n');
}

/** The root hooks that time one file; their own clock, so that a test of them leaves the real one alone. */
export function fileTimer(): { beforeAll(): void; afterAll(this: Context): void } {
  let started: number | undefined;
  return {
    beforeAll(): void {
      started = Date.now();
    },
    afterAll(this: Context): void {
      const list = process.env[TIMES_VARIABLE];
      const files = new Set((this.test?.parent?.suites ?? []).map((s) => s.file).filter((f): f is string => f !== undefined));
      // One file per run of the root hooks is parallel mode; in serial mode the reporter times the files.
      const [file] = files;
      if (list === undefined || list === '' || started === undefined || files.size !== 1 || file === undefined) return;
      appendFileSync(list, timeLine(file, Date.now() - started));
    },
  };
}

export const mochaHooks = fileTimer();
