import { expect } from 'chai';
import YAML from 'yaml';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import { parseExtensionConfig, type ExtensionConfig } from '../../src/extensions/config.js';

function parse(extensions: unknown[], previous: readonly ExtensionConfig[] = []) {
  const sink = new ProblemSink();
  const parsed = parseExtensionConfig(YAML.stringify({ extensions }), new Map(), sink.scoped('svc-cm').at('extension.config'), previous);
  return { parsed, problems: sink.problems.map(formatProblem) };
}

const good = { name: 'metrics', enabled: true, backend: { services: [{ url: 'http://metrics.internal:8080/api' }] } };

describe('extensions/config', () => {
  it('keeps the last good version of an entry that turned invalid', () => {
    const previous = parse([good]).parsed;
    const { parsed, problems } = parse([{ ...good, backend: { services: [{ url: 'not a url' }] } }], previous);
    expect(parsed).to.deep.equal(previous);
    expect(problems).to.have.length(1);
  });

  it('honours enabled: false in an otherwise invalid entry (a disable never fails open)', () => {
    const previous = parse([good]).parsed;
    expect(previous[0]?.enabled).to.equal(true);
    const { parsed, problems } = parse([{ ...good, enabled: false, backend: { services: [{ url: 'not a url' }] } }], previous);
    expect(parsed).to.deep.equal([{ ...previous[0], enabled: false }]);
    expect(problems[0]).to.match(/^svc-cm: extension\.config: extensions\[0\]\.backend\.services\[0\]\.url: 'not a url' is not a URL/);
    const typo = parse([{ ...good, enabled: false, backend: { services: [{ url: 'http://x' }], idleConnTimeout: 'soon' } }], previous).parsed;
    expect(typo.map((e) => [e.name, e.enabled])).to.deep.equal([['metrics', false]]);
  });

  it('says which state stays when enabled itself is refused ("no" is a string): the last good one', () => {
    const previous = parse([good]).parsed;
    const { parsed, problems } = parse([{ ...good, enabled: 'no' }], previous);
    expect(parsed).to.deep.equal(previous);
    expect(problems).to.deep.equal([
      "svc-cm: extension.config: extensions[0].enabled: 'no' must be true or false, not a string",
      "svc-cm: extension.config: extensions[0].enabled: extension 'metrics' stays enabled (its last good version) until this is fixed",
    ]);
  });

  it('keeps the previous list when the YAML does not parse, and never quotes the text (it may hold keyData)', () => {
    const previous = parse([good]).parsed;
    for (const text of ['extensions: *hunter2password', 'extensions: "\\qhunter2password"', 'extensions: [hunter2password']) {
      const sink = new ProblemSink();
      const parsed = parseExtensionConfig(text, new Map(), sink.scoped('svc-cm').at('extension.config'), previous);
      expect(parsed, text).to.equal(previous);
      const problems = sink.problems.map(formatProblem);
      expect(problems, text).to.have.length(1);
      expect(problems[0], text).to.match(/^svc-cm: extension\.config: YAML does not parse, the previous value stays in force/);
      expect(problems[0], text).to.not.include('hunter2');
    }
  });

  it('keeps a disabled invalid entry without a previous version disabled, not absent', () => {
    const { parsed } = parse([{ name: 'new', enabled: false, backend: {} }]);
    expect(parsed).to.deep.equal([{ name: 'new', enabled: false, idleConnTimeoutMs: 60_000, services: [], contentSecurityPolicy: 'sandbox' }]);
  });

  it('answers with Content-Security-Policy sandbox unless the entry sets its own policy or false', () => {
    const { parsed, problems } = parse([
      good,
      { ...good, name: 'ui', contentSecurityPolicy: 'sandbox allow-scripts allow-forms' },
      { ...good, name: 'trusted', contentSecurityPolicy: false },
    ]);
    expect(problems).to.deep.equal([]);
    expect(parsed.map((e) => [e.name, e.contentSecurityPolicy])).to.deep.equal([['metrics', 'sandbox'], ['ui', 'sandbox allow-scripts allow-forms'], ['trusted', undefined]]);
  });

  it('refuses a policy that could not be a header value, or is empty, keeping the sandbox', () => {
    const { parsed, problems } = parse([{ ...good, contentSecurityPolicy: 'sandbox\r\nSet-Cookie: x=1' }, { ...good, name: 'empty', contentSecurityPolicy: ' ' }]);
    expect(problems).to.deep.equal([
      'svc-cm: extension.config: extensions[0].contentSecurityPolicy: \'sandbox\\r…\': printable ASCII only',
      'svc-cm: extension.config: extensions[1].contentSecurityPolicy: \' \' must not be empty (false turns it off)',
    ]);
    expect(parsed).to.deep.equal([]);
  });

  it('reads backend.rateLimit, absent meaning no limit', () => {
    const { parsed, problems } = parse([{ ...good, backend: { ...good.backend, rateLimit: { requestsPerSecond: 2.5, burst: 10 } } }, { ...good, name: 'free' }]);
    expect(problems).to.deep.equal([]);
    expect(parsed[0]?.rateLimit).to.deep.equal({ requestsPerSecond: 2.5, burst: 10 });
    expect(parsed[1]).to.not.have.property('rateLimit');
  });

  it('refuses a rate limit that is not one, naming the key; the entry keeps its last good version', () => {
    const previous = parse([{ ...good, backend: { ...good.backend, rateLimit: { requestsPerSecond: 5, burst: 5 } } }]).parsed;
    const { parsed, problems } = parse([
      { ...good, backend: { ...good.backend, rateLimit: { requestsPerSecond: 0, burst: 1.5 } } },
      { ...good, name: 'b', backend: { ...good.backend, rateLimit: { requestsPerSecond: '10', burst: 1, perMinute: 3 } } },
      { ...good, name: 'c', backend: { ...good.backend, rateLimit: { requestsPerSecond: 10 } } },
    ], previous);
    expect(problems).to.deep.equal([
      'svc-cm: extension.config: extensions[0].backend.rateLimit.requestsPerSecond: 0 must be above 0',
      'svc-cm: extension.config: extensions[0].backend.rateLimit.burst: 1.5 must be a whole number',
      "svc-cm: extension.config: extensions[1].backend.rateLimit.requestsPerSecond: '10' must be a number, not a string",
      'svc-cm: extension.config: extensions[1].backend.rateLimit.perMinute: unknown key',
      'svc-cm: extension.config: extensions[2].backend.rateLimit.burst: required',
    ]);
    expect(parsed.map((e) => [e.name, e.rateLimit])).to.deep.equal([['metrics', { requestsPerSecond: 5, burst: 5 }]]);
  });
});

describe('extensions/config: backend.identityAssertion', () => {
  it('is off unless the entry turns it on', () => {
    expect(parse([good]).parsed[0]?.identityAssertion).to.equal(undefined);
    expect(parse([{ ...good, backend: { ...good.backend, identityAssertion: false } }]).parsed[0]?.identityAssertion).to.equal(undefined);
    const on = parse([{ ...good, backend: { ...good.backend, identityAssertion: true } }]);
    expect(on.problems).to.deep.equal([]);
    expect(on.parsed[0]?.identityAssertion).to.equal(true);
  });

  it('refuses a value that is not a boolean, naming the key, and keeps the last good version (with its assertion on)', () => {
    const previous = parse([{ ...good, backend: { ...good.backend, identityAssertion: true } }]).parsed;
    const { parsed, problems } = parse([{ ...good, backend: { ...good.backend, identityAssertion: 'yes' } }], previous);
    expect(problems).to.deep.equal(["svc-cm: extension.config: extensions[0].backend.identityAssertion: 'yes' must be true or false, not a string"]);
    expect(parsed).to.deep.equal(previous);
    expect(parsed[0]?.identityAssertion).to.equal(true);
  });
});
