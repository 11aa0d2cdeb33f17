/**
 * What fuzzed HTTP requests are made of, and the property every answer holds: below 500, and a
 * body, when there is one, that is an HTML page or a JSON error (never a stack or plain text).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { leaf } from './fuzz.js';

/** Raw query or form text: parameter names from `names`, values from short text to percent-encoding garbage. */
export function rawParameters(names: readonly string[]): fc.Arbitrary<string> {
  const value = fc.oneof(
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
    fc.string({ maxLength: 30 }),
    fc.constantFrom('', '%', '%zz', '%00', '%C3%28', '%ED%A0%80', '+', '==', '&&', 'a=b=c', '%2F..%2F', 'x'.repeat(5000)),
    leaf.map((v) => encodeURIComponent(String(v))),
  );
  const name = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.string({ maxLength: 10 }) }, { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', '', '[]', 'a[b]') });
  const pair = fc.oneof({ weight: 5, arbitrary: fc.tuple(name, value).map(([n, v]) => `${n}=${v}`) }, { weight: 1, arbitrary: name });
  return fc.array(pair, { maxLength: 8 }).map((pairs) => pairs.join('&'));
}

/** The answer's property (see the header); returns the body text for more checks. */
export async function expectHandled(res: Response, what: string): Promise<string> {
  const text = await res.text();
  expect(res.status, `${what}: ${text.slice(0, 300)}`).to.be.below(500);
  if (text !== '' && (res.status < 300 || res.status >= 400)) {
    expect(res.headers.get('content-type') ?? '', `${what}: ${res.status} ${text.slice(0, 200)}`).to.match(/^(text\/html|application\/([a-z-]+\+)?json)/);
  }
  return text;
}
