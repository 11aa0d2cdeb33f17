/** Turns zod's issues into ConfigProblems with key paths, naming unknown keys one by one. */
import type { z } from 'zod';
import type { PathSegment, ScopedSink } from './problems.js';

export function reportZodIssues(error: z.ZodError, sink: ScopedSink): void {
  for (const issue of error.issues) {
    const path = issue.path.filter((p): p is PathSegment => typeof p === 'string' || typeof p === 'number');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) sink.add([...path, key], 'unknown key');
      continue;
    }
    sink.add(path, issue.message);
  }
}

/** Parses with a schema, reporting every issue; undefined when anything was wrong. */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, sink: ScopedSink): T | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  reportZodIssues(result.error, sink);
  return undefined;
}
