/**
 * The token exchange (POST /api/v1/session/exchange) under fuzzing (docs/reliability.md): random
 * parameters in every body shape, and subject tokens from random text to tokens signed by the
 * trusted issuer with random claims. Property: never a 5xx, always an OAuth JSON answer that
 * repeats no part of the subject token, and no heap growth past a bound over the run.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { startFakeGithubActions, type FakeGithubActions } from '../helpers/fake-github-actions.js';
import { startFakeKubernetesIssuer, type FakeKubernetesIssuer } from '../helpers/fake-kubernetes-issuer.js';
import { fuzzOptions, leaf } from '../helpers/fuzz.js';
import { heapAfterGc } from '../helpers/heap.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AUDIENCE, GRANT, JWT_TYPE, MAIN, workloadConfigDir } from '../helpers/workload-setup.js';
import { echoBackend, type Backend } from '../extensions/helpers.js';

const PARAMETERS = ['grant_type', 'subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope', 'actor_token', 'actor_token_type', 'client_id'];
const TYPES = [JWT_TYPE, 'urn:ietf:params:oauth:token-type:id_token', 'urn:ietf:params:oauth:token-type:access_token', 'urn:x', ''];

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** Claims a GitHub token carries, each replaced, removed (null) or kept. */
const claimOverrides = fc.record({
  sub: fc.oneof(fc.string({ maxLength: 40 }), leaf, fc.constant(null)),
  repository_owner: fc.oneof(fc.constantFrom('my-org', 'other', ''), leaf, fc.constant(null)),
  ref: fc.oneof(fc.constantFrom('refs/heads/main', 'refs/tags/v1', 'refs/heads/x'), leaf, fc.constant(null)),
  aud: fc.oneof(fc.constantFrom(AUDIENCE, 'other'), fc.array(fc.constantFrom(AUDIENCE, 'x'), { maxLength: 3 }), leaf),
  exp: fc.oneof(fc.integer({ min: -10, max: 100_000 }).map((s) => Math.floor(Date.now() / 1000) + s), leaf, fc.constant(null)),
  iat: fc.oneof(fc.integer({ min: -100_000, max: 100 }).map((s) => Math.floor(Date.now() / 1000) + s), leaf),
  nbf: fc.oneof(fc.integer({ min: -100, max: 100 }).map((s) => Math.floor(Date.now() / 1000) + s), leaf),
  jti: fc.oneof(fc.uuid(), leaf, fc.constant(null)),
  svc_groups: fc.oneof(fc.array(fc.string({ maxLength: 10 }), { maxLength: 5 }), leaf),
  iss: fc.oneof(fc.constant(undefined), leaf),
}, { requiredKeys: [] });

type SubjectToken = { readonly kind: 'text'; readonly value: string } | { readonly kind: 'signed'; readonly claims: Record<string, unknown> };

const subjectToken: fc.Arbitrary<SubjectToken> = fc.oneof(
  { weight: 3, arbitrary: claimOverrides.map((claims): SubjectToken => ({ kind: 'signed', claims })) },
  // A valid token with only its groups changed: the way through to a success.
  { weight: 1, arbitrary: fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 }).map((groups): SubjectToken => ({ kind: 'signed', claims: { svc_groups: groups } })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 100 }).map((value): SubjectToken => ({ kind: 'text', value })) },
  { weight: 2, arbitrary: fc.tuple(fc.oneof(fc.record({ alg: fc.constantFrom('RS256', 'none', 'HS256', 'ES256', 'x'), kid: fc.oneof(fc.string(), leaf), typ: leaf }, { requiredKeys: [] }), leaf), fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), leaf), leaf), fc.string({ maxLength: 50 }))
    .map(([header, payload, signature]): SubjectToken => ({ kind: 'text', value: `${b64(header)}.${b64(payload)}.${b64(signature)}` })) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom('.', 'a', '-', '_', '=', '%', 'eyJ', ' '), { maxLength: 40 }).map((parts): SubjectToken => ({ kind: 'text', value: parts.join('') })) },
);

/** The other parameters: usually the right ones, sometimes missing, wrong, repeated or unknown. */
const otherParameters = fc.record({
  grant_type: fc.oneof({ weight: 4, arbitrary: fc.constant(GRANT) }, { weight: 1, arbitrary: fc.constantFrom('authorization_code', '', GRANT.toUpperCase()) }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) }),
  subject_token_type: fc.oneof({ weight: 4, arbitrary: fc.constant(JWT_TYPE) }, { weight: 1, arbitrary: fc.constantFrom(...TYPES) }),
  extra: fc.array(fc.tuple(fc.constantFrom(...PARAMETERS, 'x', ''), fc.string({ maxLength: 30 })), { maxLength: 3 }),
  drop: fc.subarray(['grant_type', 'subject_token', 'subject_token_type']),
});

const encoding = fc.constantFrom('form', 'form', 'json', 'json-random', 'text', 'none');

describe('token exchange under fuzzing', function () {
  this.timeout(120_000);
  let github: FakeGithubActions;
  let kubernetes: FakeKubernetesIssuer;
  let backend: Backend;
  let server: TestServer;
  let dir: string;

  before(async () => {
    [github, kubernetes, backend] = await Promise.all([startFakeGithubActions(), startFakeKubernetesIssuer(), echoBackend('echo')]);
    dir = workloadConfigDir(github, kubernetes, backend.url);
    // Refusals would lock the identities they name; the lockout is tested in exchange.test.ts.
    server = await startTestServer(dir, { env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '100000' } });
  });

  after(async () => {
    await server?.close(1000);
    await Promise.all([github?.close(), kubernetes?.close(), backend?.close()]);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function bodyFor(token: string, params: typeof otherParameters extends fc.Arbitrary<infer P> ? P : never, as: string, random: unknown): Promise<RequestInit> {
    const list: [string, string][] = [['grant_type', params.grant_type], ['subject_token', token], ['subject_token_type', params.subject_token_type], ...params.extra];
    const kept = list.filter(([name], i) => i >= 3 || !params.drop.includes(name));
    if (as === 'form') return { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(kept).toString() };
    if (as === 'json') return { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(Object.fromEntries(kept)) };
    if (as === 'json-random') return { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(random) ?? 'undefined' };
    if (as === 'text') return { method: 'POST', headers: { 'content-type': 'text/plain' }, body: new URLSearchParams(kept).toString() };
    return { method: 'POST', body: new URLSearchParams(kept).toString() };
  }

  it('answers every request below 500 with an OAuth JSON error or a token, never repeating the subject token (300 cases, seed 3804)', async () => {
    const statuses = new Map<number, number>();
    const heapBefore = heapAfterGc();
    await fc.assert(
      fc.asyncProperty(subjectToken, otherParameters, encoding, fc.anything({ maxDepth: 3 }), async (subject, params, as, random) => {
        const token = subject.kind === 'text' ? subject.value : await github.token(MAIN, AUDIENCE, subject.claims);
        const res = await fetch(`${server.url}/api/v1/session/exchange`, await bodyFor(token, params, as, random));
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(res.status, text).to.be.below(500);
        expect(res.headers.get('content-type') ?? '', text).to.match(/^application\/json/);
        const body = JSON.parse(text) as Record<string, unknown>;
        if (res.status === 200) expect(body['access_token']).to.be.a('string');
        else expect(body['error'], text).to.be.a('string');
        const signature = token.split('.')[2] ?? '';
        if (signature.length >= 16) expect(text, 'the answer repeats the subject token').to.not.contain(signature);
      }),
      fuzzOptions(3804, 300),
    );
    const growth = heapAfterGc() - heapBefore;
    // The generator must reach a success and the refusals, or the property proves little.
    expect(statuses.get(200) ?? 0, JSON.stringify([...statuses])).to.be.greaterThan(0);
    expect(statuses.get(400) ?? 0, JSON.stringify([...statuses])).to.be.greaterThan(50);
    expect(growth, `heap grew by ${Math.round(growth / 2 ** 20)} MiB`).to.be.below(32 * 2 ** 20);
  });
});
