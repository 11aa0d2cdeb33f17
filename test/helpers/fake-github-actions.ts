/**
 * A local stand-in for GitHub Actions' OIDC token issuer and a runner's token request
 * endpoint, over HTTPS with a certificate from a test CA. It follows GitHub's documentation;
 * nothing here is GitHub's code:
 *
 *   "OpenID Connect" / "About security hardening with OpenID Connect" (docs.github.com/en/actions/
 *   concepts/security/openid-connect and .../security-hardening-your-deployments/about-security-
 *   hardening-with-openid-connect): the issuer `https://token.actions.githubusercontent.com`
 *   publishes its discovery document at `/.well-known/openid-configuration` (`jwks_uri`
 *   `<issuer>/.well-known/jwks`, `id_token_signing_alg_values_supported: [RS256]`), and its
 *   tokens carry `jti`, `sub` (`repo:<owner>/<repo>:ref:<ref>`, or
 *   `repo:<owner>/<repo>:environment:<name>` for a job with an environment), `aud` (default the
 *   owner's URL, or the audience asked for), `ref`, `sha`, `repository`, `repository_owner`,
 *   `repository_owner_id`, `run_id`, `run_number`, `run_attempt`, `actor`, `workflow`,
 *   `event_name`, `ref_type`, `job_workflow_ref`, `environment` (when the job has one), `iss`,
 *   `nbf`, `exp` (5 minutes in practice), `iat`; header `alg: RS256`, `kid`, `x5t`.
 *
 *   The runner's request: a job with `permissions: id-token: write` gets
 *   `ACTIONS_ID_TOKEN_REQUEST_URL` (which already has a query string) and
 *   `ACTIONS_ID_TOKEN_REQUEST_TOKEN`; `GET <url>&audience=<aud>` with
 *   `Authorization: bearer <request token>` answers `{"count": n, "value": "<JWT>"}`
 *   (actions/toolkit `@actions/core` getIDToken, "Using custom actions" in the same docs).
 *
 * The issuer here is `https://127.0.0.1:<port>` instead of GitHub's host.
 */
import { randomUUID } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { bearer, json, newSecret, startHttpsFake, type HttpsFake } from './fake-https.js';
import { makeSigningKey, signToken, type SigningKey } from './fake-oidc-keys.js';

export interface GithubJob {
  readonly owner: string;
  readonly repo: string;
  /** e.g. refs/heads/main */
  readonly ref: string;
  readonly environment?: string;
  readonly workflow?: string;
}

export interface FakeGithubActions extends HttpsFake {
  readonly issuer: string;
  /** The key the issuer signs with (in its key set). */
  readonly key: SigningKey;
  /** What a runner sets for a job that may request tokens (id-token: write). */
  runnerEnv(job: GithubJob): { ACTIONS_ID_TOKEN_REQUEST_URL: string; ACTIONS_ID_TOKEN_REQUEST_TOKEN: string };
  /** A job's token as GitHub mints it; `overrides` replace or add claims (null removes one). */
  token(job: GithubJob, audience: string, overrides?: Readonly<Record<string, unknown>>, signWith?: SigningKey): Promise<string>;
  /** Replaces the published key set (a key rotation); tokens are still signed with `key` unless told otherwise. */
  publishKeys(keys: readonly SigningKey[]): void;
  /** How many times the key set was fetched. */
  readonly jwksFetches: number;
  /** Closes the listening socket, so the issuer cannot be reached (the port stays reserved for reopen). */
  goDown(): Promise<void>;
}

export async function startFakeGithubActions(): Promise<FakeGithubActions> {
  const key = await makeSigningKey();
  const requestTokens = new Map<string, GithubJob>();
  let jwksFetches = 0;
  let published: readonly SigningKey[] = [key];
  let down = false;
  let issuer = '';
  const claimsFor = (job: GithubJob, audience: string): JWTPayload => {
    const now = Math.floor(Date.now() / 1000);
    const repository = `${job.owner}/${job.repo}`;
    const workflow = job.workflow ?? 'ci';
    return {
      jti: randomUUID(),
      sub: job.environment !== undefined ? `repo:${repository}:environment:${job.environment}` : `repo:${repository}:ref:${job.ref}`,
      aud: audience,
      ref: job.ref,
      sha: 'a3f1c0ffee5eed0123456789abcdef0123456789',
      repository,
      repository_owner: job.owner,
      repository_owner_id: '65',
      repository_visibility: 'private',
      repository_id: '74',
      run_id: '4242',
      run_number: '7',
      run_attempt: '1',
      actor: 'octocat',
      actor_id: '12',
      workflow,
      head_ref: '',
      base_ref: '',
      event_name: 'push',
      ref_type: job.ref.startsWith('refs/tags/') ? 'tag' : 'branch',
      job_workflow_ref: `${repository}/.github/workflows/${workflow}.yml@${job.ref}`,
      ...(job.environment !== undefined ? { environment: job.environment } : {}),
      iss: issuer,
      nbf: now - 5,
      exp: now + 300,
      iat: now,
    };
  };
  const mint = (job: GithubJob, audience: string, overrides: Readonly<Record<string, unknown>> = {}, signWith = key): Promise<string> => {
    const claims: Record<string, unknown> = { ...claimsFor(job, audience), ...overrides };
    for (const [name, value] of Object.entries(overrides)) if (value === null) delete claims[name];
    return signToken(signWith, claims, { x5t: 'stand-in' });
  };
  const fake = await startHttpsFake(async (req, url, res) => {
    if (down) return void res.destroy();
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer,
        jwks_uri: `${issuer}/.well-known/jwks`,
        subject_types_supported: ['public', 'pairwise'],
        response_types_supported: ['id_token'],
        claims_supported: ['sub', 'aud', 'exp', 'iat', 'iss', 'jti', 'nbf', 'ref', 'repository', 'repository_owner', 'workflow', 'job_workflow_ref', 'environment'],
        id_token_signing_alg_values_supported: ['RS256'],
        scopes_supported: ['openid'],
      });
    }
    if (url.pathname === '/.well-known/jwks') {
      jwksFetches++;
      return json(res, 200, { keys: published.map((k) => k.publicJwk) });
    }
    if (url.pathname === '/_apis/pipelines/1/runs/4242/idtoken') {
      const job = requestTokens.get(bearer(req) ?? '');
      if (job === undefined) return json(res, 401, { message: 'Bad credentials' });
      const audience = url.searchParams.get('audience') ?? `https://github.com/${job.owner}`;
      return json(res, 200, { count: 1, value: await mint(job, audience) });
    }
    json(res, 404, { message: 'Not Found' });
  });
  issuer = fake.url;
  return {
    ...fake,
    issuer,
    key,
    runnerEnv(job) {
      const requestToken = newSecret('runner');
      requestTokens.set(requestToken, job);
      return { ACTIONS_ID_TOKEN_REQUEST_URL: `${fake.url}/_apis/pipelines/1/runs/4242/idtoken?api-version=2.0`, ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken };
    },
    token: mint,
    publishKeys(keys) {
      published = keys;
    },
    get jwksFetches() {
      return jwksFetches;
    },
    async goDown() {
      down = true;
      await fake.close();
    },
  };
}
