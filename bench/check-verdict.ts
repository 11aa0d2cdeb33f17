/**
 * The verdict of `npm run bench:check` (bench/check.ts), apart from running anything: each ratio
 * measured against its goal and against the figure last published for this kind of machine
 * (bench/published.json, ./machine-kind.ts). Only a fall of more than REGRESSION_MARGIN below the
 * published figure fails the check: the goal is printed for the reader, since on a shared host a
 * run may miss a goal the code meets, and a gate on the goal would fail on load rather than on code.
 *
 * Figures are judged only against the same kind of machine: the same build gave SSO logins
 * 4.8-7.7 x and refresh grants 0.47-0.70 x on two 2-core hosts, so a gate across kinds fails on
 * an unchanged build. On a kind with nothing published the run prints its figures, says so and
 * how to publish, and passes: it has nothing to regress from.
 */
export const REGRESSION_MARGIN = 0.2;

/** What a ratio compares and its goal, the same on every kind of machine. */
export interface RatioGoal {
  /** What the ratio compares, in words. */
  readonly what: string;
  readonly goal: number;
}

/** A figure published for one kind of machine. */
export interface PublishedFigure {
  readonly published: number;
  /** When and how the published figure was measured. */
  readonly measured: string;
}

export interface MachineFigures {
  /** ./machine-kind.ts's label: CPU model, vCPUs, memory in GiB. */
  readonly kind: string;
  readonly figures: Readonly<Record<string, PublishedFigure>>;
}

export interface Published {
  readonly ratios: Readonly<Record<string, RatioGoal>>;
  readonly machines: readonly MachineFigures[];
}

export interface Verdict {
  readonly name: string;
  readonly ratio: number | undefined;
  readonly meetsGoal: boolean;
  /** measured / published - 1; undefined with nothing published. */
  readonly change: number | undefined;
  readonly regression: boolean;
  readonly line: string;
}

/** One ratio: against its goal, and against the figure published for this kind when there is one. */
export function judge(name: string, goal: RatioGoal, figure: PublishedFigure | undefined, ratio: number | undefined): Verdict {
  if (ratio === undefined || !Number.isFinite(ratio)) {
    return { name, ratio: undefined, meetsGoal: false, change: undefined, regression: true, line: `${name.padEnd(26)} not measured                                   FAIL (${goal.what})` };
  }
  const meetsGoal = ratio >= goal.goal;
  const head = `${name.padEnd(26)} ${ratio.toFixed(2).padStart(6)} x   goal >= ${`${goal.goal} x`.padEnd(6)} ${meetsGoal ? 'met  ' : 'below'}`;
  if (figure === undefined) {
    return { name, ratio, meetsGoal, change: undefined, regression: false, line: `${head}   nothing published for this kind of machine` };
  }
  const change = ratio / figure.published - 1;
  const regression = ratio < figure.published * (1 - REGRESSION_MARGIN);
  const pct = `${change >= 0 ? '+' : ''}${(100 * change).toFixed(0)} %`;
  const line = `${head}   published ${figure.published.toFixed(2)} x (${pct.padStart(6)})   ${regression ? `FAIL: more than ${100 * REGRESSION_MARGIN} % below the published figure` : 'ok'}`;
  return { name, ratio, meetsGoal, change, regression, line };
}

export interface Judgement {
  readonly verdicts: readonly Verdict[];
  /** The figures published for this kind, if any. */
  readonly machine: MachineFigures | undefined;
  /** Lines after the verdicts: which kind, and how to publish when nothing is published for it. */
  readonly notes: readonly string[];
  readonly failed: readonly string[];
}

/**
 * Every ratio of `published.ratios` judged on this kind of machine. On a kind with nothing
 * published, no ratio can regress; a ratio not measured still fails, since that is a broken run
 * (svc had an error) on any kind.
 */
export function judgeAll(published: Published, kind: string, medians: Readonly<Record<string, number | undefined>>, when: string): Judgement {
  const machine = published.machines.find((m) => m.kind === kind);
  const verdicts = Object.entries(published.ratios).map(([name, goal]) => judge(name, goal, machine !== undefined && Object.hasOwn(machine.figures, name) ? machine.figures[name] : undefined, medians[name]));
  const notes = [`machine kind: ${kind}`];
  if (machine === undefined) {
    const figures = Object.fromEntries(verdicts.filter((v) => v.ratio !== undefined)
      .map((v) => [v.name, { published: Number((v.ratio as number).toFixed(2)), measured: `${when}, median of the rounds of npm run bench:check (load average, quiet or not: say which)` }]));
    notes.push(
      `nothing is published for this kind of machine (published: ${published.machines.map((m) => m.kind).join('; ') || 'none'}), so no figure is judged against another kind's.`,
      'To publish for this kind: run npm run bench:check on a quiet machine of this kind and add this entry to "machines" in bench/published.json, with the figures in docs/benchmarks.md:',
      JSON.stringify({ kind, figures }, null, 2),
    );
  }
  return { verdicts, machine, notes, failed: verdicts.filter((v) => v.regression).map((v) => v.name) };
}

/** The median of the rounds that measured the ratio; undefined when any round did not (a round that failed fails the check). */
export function median(values: readonly (number | undefined)[]): number | undefined {
  if (values.length === 0 || values.some((v) => v === undefined || !Number.isFinite(v))) return undefined;
  const sorted = (values as readonly number[]).slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

type Raw = Readonly<Record<string, unknown>>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads bench/published.json, naming every key that is wrong at once (bench/published.json:
 * machines[0].figures.proxy.published: …); unknown keys are refused, so a misspelt one is not
 * silently ignored.
 */
export function parsePublished(raw: unknown): Published {
  const problems: string[] = [];
  const problem = (at: string, text: string) => problems.push(`bench/published.json: ${at}: ${text}`);
  const unknownKeys = (value: Raw, at: string, known: readonly string[]) => {
    for (const key of Object.keys(value)) if (!known.includes(key)) problem(at === '' ? key : `${at}.${key}`, `unknown key (expected ${known.join(', ')})`);
  };
  const positive = (value: Raw, key: string, at: string) => {
    if (typeof value[key] !== 'number' || !(Number(value[key]) > 0)) problem(`${at}.${key}`, `expected a positive number, got ${JSON.stringify(value[key])}`);
  };
  const sentence = (value: Raw, key: string, at: string) => {
    if (typeof value[key] !== 'string' || value[key] === '') problem(`${at}.${key}`, `expected a sentence, got ${JSON.stringify(value[key])}`);
  };
  if (!isObject(raw)) throw new Error('bench/published.json: expected an object with "ratios" and "machines"');
  unknownKeys(raw, '', ['ratios', 'machines']);

  const ratios: Record<string, RatioGoal> = {};
  if (!isObject(raw['ratios'])) problem('ratios', 'expected an object of ratios, each with what and goal');
  else {
    for (const [name, value] of Object.entries(raw['ratios'])) {
      const at = `ratios.${name}`;
      if (!isObject(value)) {
        problem(at, 'expected an object with what and goal');
        continue;
      }
      unknownKeys(value, at, ['what', 'goal']);
      sentence(value, 'what', at);
      positive(value, 'goal', at);
      ratios[name] = value as unknown as RatioGoal;
    }
  }

  const machines: MachineFigures[] = [];
  if (!Array.isArray(raw['machines'])) problem('machines', 'expected a list of { kind, figures }');
  else {
    const kinds = new Set<string>();
    (raw['machines'] as readonly unknown[]).forEach((value, i) => {
      const at = `machines[${i}]`;
      if (!isObject(value)) {
        problem(at, 'expected an object with kind and figures');
        return;
      }
      unknownKeys(value, at, ['kind', 'figures']);
      sentence(value, 'kind', at);
      if (typeof value['kind'] === 'string') {
        if (kinds.has(value['kind'])) problem(`${at}.kind`, `${JSON.stringify(value['kind'])} is published twice; one entry per kind`);
        kinds.add(value['kind']);
      }
      const figures = value['figures'];
      if (!isObject(figures)) {
        problem(`${at}.figures`, 'expected an object of figures, each with published and measured');
        return;
      }
      for (const [name, figure] of Object.entries(figures)) {
        const where = `${at}.figures.${name}`;
        if (!Object.hasOwn(ratios, name) && isObject(raw['ratios'])) problem(where, `not a ratio of "ratios" (${Object.keys(ratios).join(', ')})`);
        if (!isObject(figure)) {
          problem(where, 'expected an object with published and measured');
          continue;
        }
        unknownKeys(figure, where, ['published', 'measured']);
        positive(figure, 'published', where);
        sentence(figure, 'measured', where);
      }
      machines.push(value as unknown as MachineFigures);
    });
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return { ratios, machines };
}
