/**
 * Configuration problems with the key path that names them, for example
 * `svc-cm: extension.config: extensions[1].backend.services[0].url: not a URL`.
 * Parsers collect every problem before they report, so an operator sees all of them at once.
 */
import type { ValueOrigin } from './value-origin.js';

export type PathSegment = string | number;

export interface ConfigProblem {
  /** The object or file the problem is in: `svc-cm`, `svc-rbac-cm`, `config/cm.yaml`. */
  readonly source: string;
  /** The key path inside it; the first segment is usually the data key (`extension.config`). */
  readonly path: readonly PathSegment[];
  readonly message: string;
}

export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? shownKey(segment) : `.${shownKey(segment)}`;
  }
  return out;
}

/**
 * A key with `:` or `=` in it is most likely a key and its value run together (`{clientSecret:x}`,
 * a flow map without the space, reads as one key), so it is never repeated: the value may be a
 * secret. No key of the stores or of their YAML schemas contains either character.
 */
function shownKey(segment: string): string {
  return /[:=]/.test(segment) ? `<a key with ':' or '=' in it, not shown: ${segment.split(/[:=]/)[0]?.slice(0, 40) ?? ''}…>` : segment;
}

export function formatProblem(problem: ConfigProblem): string {
  const parts = [problem.source];
  if (problem.path.length > 0) {
    // The data key itself contains dots (`extension.config`), so it stands apart from the path inside it.
    const [dataKey, ...inner] = problem.path;
    if (inner.length === 0) parts.push(String(dataKey));
    // An index right after the key reads as part of it: `accounts.ci.tokens[0]`.
    else if (typeof inner[0] === 'number') parts.push(`${String(dataKey)}${formatPath(inner)}`);
    else parts.push(String(dataKey), formatPath(inner));
  }
  return `${parts.join(': ')}: ${problem.message}`;
}

/** The one error type configuration parsing throws. */
export class ConfigProblems extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'ConfigProblems';
  }
}

/** Collects problems under a source and a path prefix. */
export class ProblemSink {
  readonly problems: ConfigProblem[] = [];
  /** What parses but cannot mean what was meant (a rights line for a resource svc has not): said, not refused. */
  readonly warnings: ConfigProblem[] = [];

  /** Where each object's data values stand in their files (`source` -> data key -> origin), when known. */
  constructor(private readonly origins: ReadonlyMap<string, Readonly<Record<string, ValueOrigin>>> = new Map()) {}

  originOf(source: string, dataKey: PathSegment | undefined): ValueOrigin | undefined {
    return typeof dataKey === 'string' ? this.origins.get(source)?.[dataKey] : undefined;
  }

  add(source: string, path: readonly PathSegment[], message: string): void {
    this.problems.push({ source, path, message });
  }

  warn(source: string, path: readonly PathSegment[], message: string): void {
    this.warnings.push({ source, path, message });
  }

  scoped(source: string, prefix: readonly PathSegment[] = []): ScopedSink {
    return new ScopedSink(this, source, prefix);
  }

  get empty(): boolean {
    return this.problems.length === 0;
  }
}

export class ScopedSink {
  constructor(
    private readonly sink: ProblemSink,
    readonly source: string,
    readonly prefix: readonly PathSegment[],
  ) {}

  add(path: readonly PathSegment[], message: string): void {
    this.sink.add(this.source, [...this.prefix, ...path], message);
  }

  warn(path: readonly PathSegment[], message: string): void {
    this.sink.warn(this.source, [...this.prefix, ...path], message);
  }

  /** Where the data value this sink reports on stands in its file, when known (value-origin.ts). */
  valueOrigin(): ValueOrigin | undefined {
    return this.sink.originOf(this.source, this.prefix[0]);
  }

  at(...segments: PathSegment[]): ScopedSink {
    return new ScopedSink(this.sink, this.source, [...this.prefix, ...segments]);
  }

  /** How many problems the whole sink holds: compare before and after to see if an entry added any. */
  get count(): number {
    return this.sink.problems.length;
  }

  /**
   * This sink, deaf to problems at or under `paths` (relative to it): for checks that run on
   * values standing in for secret references that failed, already reported (secret-ref.ts).
   */
  except(paths: readonly (readonly PathSegment[])[]): ScopedSink {
    return paths.length === 0 ? this : new ExceptSink(this, paths);
  }
}

const startsWith = (path: readonly PathSegment[], prefix: readonly PathSegment[]): boolean => prefix.length <= path.length && prefix.every((p, i) => path[i] === p);

class ExceptSink extends ScopedSink {
  constructor(
    private readonly inner: ScopedSink,
    private readonly skip: readonly (readonly PathSegment[])[],
  ) {
    super(inner['sink'], inner.source, inner.prefix);
  }

  override add(path: readonly PathSegment[], message: string): void {
    if (!this.skip.some((s) => startsWith(path, s))) this.inner.add(path, message);
  }

  override at(...segments: PathSegment[]): ScopedSink {
    const under = this.skip.filter((s) => startsWith(s, segments)).map((s) => s.slice(segments.length));
    return this.inner.at(...segments).except(under);
  }
}
