/**
 * The verdict of `npm run bench:check` (bench/check.ts), apart from running anything: each ratio
 * measured against its goal and against the figure last published in docs/benchmarks.md
 * (bench/published.json). Only a fall of more than REGRESSION_MARGIN below the published figure
 * fails the check: the goal is printed for the reader, since on a shared host a run may miss a
 * goal the code meets, and a gate on the goal would fail on load rather than on code.
 */
export const REGRESSION_MARGIN = 0.2;

export interface PublishedRatio {
  /** What the ratio compares, in words. */
  readonly what: string;
  readonly goal: number;
  readonly published: number;
  /** When and how the published figure was measured. */
  readonly measured: string;
}

export type Published = Readonly<Record<string, PublishedRatio>>;

export interface Verdict {
  readonly name: string;
  readonly ratio: number | undefined;
  readonly meetsGoal: boolean;
  /** measured / published - 1 */
  readonly change: number | undefined;
  readonly regression: boolean;
  readonly line: string;
}

export function judge(name: string, entry: PublishedRatio, ratio: number | undefined): Verdict {
  if (ratio === undefined || !Number.isFinite(ratio)) {
    return { name, ratio: undefined, meetsGoal: false, change: undefined, regression: true, line: `${name.padEnd(26)} not measured                                   FAIL (${entry.what})` };
  }
  const change = ratio / entry.published - 1;
  const regression = ratio < entry.published * (1 - REGRESSION_MARGIN);
  const meetsGoal = ratio >= entry.goal;
  const pct = `${change >= 0 ? '+' : ''}${(100 * change).toFixed(0)} %`;
  const line = `${name.padEnd(26)} ${ratio.toFixed(2).padStart(6)} x   goal >= ${`${entry.goal} x`.padEnd(6)} ${meetsGoal ? 'met  ' : 'below'}   published ${entry.published.toFixed(2)} x (${pct.padStart(6)})   ${regression ? `FAIL: more than ${100 * REGRESSION_MARGIN} % below the published figure` : 'ok'}`;
  return { name, ratio, meetsGoal, change, regression, line };
}

/** The median of the rounds that measured the ratio; undefined when any round did not (a round that failed fails the check). */
export function median(values: readonly (number | undefined)[]): number | undefined {
  if (values.length === 0 || values.some((v) => v === undefined || !Number.isFinite(v))) return undefined;
  const sorted = (values as readonly number[]).slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Reads bench/published.json's shape, naming the key that is wrong. */
export function parsePublished(raw: unknown): Published {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('bench/published.json: expected an object of ratios');
  const out: Record<string, PublishedRatio> = {};
  for (const [name, value] of Object.entries(raw)) {
    const v = value as Partial<Record<keyof PublishedRatio, unknown>>;
    for (const key of ['goal', 'published'] as const) {
      if (typeof v[key] !== 'number' || !(Number(v[key]) > 0)) throw new Error(`bench/published.json: ${name}.${key}: expected a positive number, got ${JSON.stringify(v[key])}`);
    }
    for (const key of ['what', 'measured'] as const) {
      if (typeof v[key] !== 'string' || v[key] === '') throw new Error(`bench/published.json: ${name}.${key}: expected a sentence, got ${JSON.stringify(v[key])}`);
    }
    out[name] = v as PublishedRatio;
  }
  return out;
}
