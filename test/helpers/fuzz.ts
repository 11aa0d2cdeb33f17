/**
 * Bounded, seeded fuzzing with fast-check, shared by the fuzz tests (docs/reliability.md).
 *
 * Every property runs a fixed number of cases from a fixed seed, so a run is the same on every
 * machine and a failure reproduces. FUZZ_SEED and FUZZ_PATH (both printed by fast-check with a
 * failure) replay one failing case; FUZZ_RUNS multiplies the case counts for a longer run by hand.
 */
import fc from 'fast-check';

/** fast-check's options for a property: `runs` cases from `seed`, unless the environment asks for a replay. */
export function fuzzOptions(seed: number, runs: number): fc.Parameters<unknown> {
  const env = process.env;
  const factor = Number(env['FUZZ_RUNS'] ?? '1');
  const replaySeed = env['FUZZ_SEED'];
  return {
    seed: replaySeed !== undefined ? Number(replaySeed) : seed,
    numRuns: Math.max(1, Math.round(runs * (Number.isFinite(factor) && factor > 0 ? factor : 1))),
    ...(env['FUZZ_PATH'] !== undefined ? { path: env['FUZZ_PATH'] } : {}),
    endOnFailure: true,
  };
}

/** Values that reach the branches parsers care about: secret references, URLs, durations, empties. */
const SPECIALS = [
  '', ' ', '$svc-secret:fuzz.secret', '$fuzz.secret', '$missing:key', '$', 'http://127.0.0.1:1/x', 'https://example.com/cb', 'https://',
  '15m', '25h', '-1s', '0', '{{sub}}', '{{', 'a..b', '*', 'kubernetes\\.io.namespace', '\u0000', 'é'.repeat(3), 'x'.repeat(300),
];

/** A value of any shape, small. */
export const leaf: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIALS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2, maxKeys: 3 }) },
);

const DROP = Symbol('drop');

/**
 * Variants of a valid value: most of it kept, some values replaced by any other, some keys or
 * items dropped, an unknown key added. Starting from valid examples reaches the checks deep in a
 * schema, which random documents rarely get past the first key to.
 */
export function mutated(value: unknown): fc.Arbitrary<unknown> {
  if (Array.isArray(value)) {
    const items = fc.tuple(...value.map((item) => fc.option(mutated(item), { freq: 8, nil: DROP })));
    const kept = fc.tuple(items, fc.array(leaf, { maxLength: 1 })).map(([xs, extra]) => [...xs.filter((x) => x !== DROP), ...extra]);
    return fc.oneof({ weight: 9, arbitrary: kept }, { weight: 1, arbitrary: leaf });
  }
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value);
    const values = fc.tuple(...keys.map((key) => fc.option(mutated((value as Record<string, unknown>)[key]), { freq: 8, nil: DROP })));
    const extra = fc.dictionary(fc.constantFrom('unknown', 'Name', 'ID', 'redirectURI', '__proto__', 'constructor'), leaf, { maxKeys: 1 });
    const kept = fc.tuple(values, fc.option(extra, { freq: 5, nil: {} })).map(([vs, more]) => {
      const out: Record<string, unknown> = {};
      keys.forEach((key, i) => {
        if (vs[i] !== DROP) out[key] = vs[i];
      });
      return Object.assign(out, more);
    });
    return fc.oneof({ weight: 9, arbitrary: kept }, { weight: 1, arbitrary: leaf });
  }
  return fc.oneof({ weight: 6, arbitrary: fc.constant(value) }, { weight: 1, arbitrary: leaf });
}

