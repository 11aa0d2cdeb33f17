/**
 * What fuzzed HTTP requests are made of, and the property every answer holds: below 500, and a
 * body, when there is one, that is an HTML page or a JSON error (never a stack or plain text).
 * `fuzzedServer` keeps a fuzz file's server and what its closing check needs (statuses, heap).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { leaf } from './fuzz.js';
import { heapAfterGc } from './heap.js';

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

/** A server that one describe() fuzzes over HTTP: every answer counted by status, the heap measured from the start. */
export interface FuzzedServer {
  /** The server's base URL, once the describe's before hook has run. */
  readonly url: string;
  /** fetch(url + path) without following redirects; the answer's status is counted. A function, not a method: tests pass it around. */
  readonly call: (path: string, init?: RequestInit) => Promise<Response>;
  /** The run's closing property: the heap grew by less than 48 MiB, and each of `statuses` was answered at least once. */
  expectBoundedRun(statuses: readonly number[]): void;
}

/**
 * Starts the server in the calling describe()'s before hook, then takes the heap's baseline (so the
 * server's own start-up is not counted as growth), and closes the server in its after hook.
 */
export function fuzzedServer(start: () => Promise<{ readonly url: string; readonly server: { close(): Promise<unknown> } }>): FuzzedServer {
  let started: Awaited<ReturnType<typeof start>> | undefined;
  const statuses = new Map<number, number>();
  let heapBefore = 0;

  before(async function () {
    started = await start();
    heapBefore = heapAfterGc();
  });

  after(async function () {
    await started?.server.close();
  });

  const url = (): string => {
    if (started === undefined) throw new Error('the fuzzed server is not started (use it in a test or a later hook)');
    return started.url;
  };

  return {
    get url() {
      return url();
    },
    call: async (path, init = {}) => {
      const res = await fetch(`${url()}${path}`, { redirect: 'manual', ...init });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      return res;
    },
    expectBoundedRun(expected) {
      const growth = heapAfterGc() - heapBefore;
      expect(growth, `heap grew by ${Math.round(growth / 2 ** 20)} MiB`).to.be.below(48 * 2 ** 20);
      for (const status of expected) expect(statuses.get(status) ?? 0, JSON.stringify([...statuses])).to.be.greaterThan(0);
    },
  };
}
