/**
 * svc set up for workload identity tests: svc-cm trusting a GitHub Actions issuer (`github`:
 * org my-org, main or v* tags, groups from the `svc_groups` claim and `gh-<owner>`, tokens of
 * 15 minutes) and a Kubernetes issuer (`k8s`: namespace ci, subject the service account's name,
 * groups the namespace and `sa-<name>`), three extensions, a local account `ci` with its own
 * rights, and RFC 8693 requests.
 */
import bcrypt from 'bcryptjs';
import YAML from 'yaml';
import type { FakeGithubActions, GithubJob } from './fake-github-actions.js';
import type { FakeKubernetesIssuer } from './fake-kubernetes-issuer.js';
import { configMap, secret, tempConfigDir } from './manifests.js';

export const AUDIENCE = 'https://svc.example.test';
export const MAIN: GithubJob = { owner: 'my-org', repo: 'app', ref: 'refs/heads/main' };
export const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
export const MAIN_SUBJECT = 'workload:github:repo:my-org/app:ref:refs/heads/main';

export const WORKLOAD_POLICY = [
  `p, ${MAIN_SUBJECT}, extensions, *, */tools, allow`,
  'p, role:secret, extensions, *, */secret, allow',
  'g, ci, role:secret',
  'p, ci, extensions, *, */secret, allow',
  'g, deployers, role:deployers',
  'p, role:deployers, extensions, *, */deploy, allow',
  'p, workload:k8s:builder, extensions, *, */tools, allow',
].join('\n');

/** svc-cm with the two issuers, three extensions in front of `backendUrl`, and a local account `ci`. */
export function workloadConfigDir(github: FakeGithubActions, kubernetes: FakeKubernetesIssuer, backendUrl: string, extraIssuers: readonly unknown[] = []): string {
  const workloads = [
    {
      name: 'github',
      issuer: github.issuer,
      rootCA: github.caPem,
      audiences: [AUDIENCE],
      claims: { repository_owner: 'my-org', ref: ['refs/heads/main', 'refs/tags/v*'] },
      groups: [{ claim: 'svc_groups' }, 'gh-{{repository_owner}}'],
      maxTokenLifetime: '15m',
    },
    {
      name: 'k8s',
      issuer: kubernetes.issuer,
      rootCA: kubernetes.caPem,
      audiences: [AUDIENCE],
      claims: { 'kubernetes\\.io.namespace': 'ci' },
      subject: '{{kubernetes\\.io.serviceaccount.name}}',
      groups: ['{{kubernetes\\.io.namespace}}', 'sa-{{kubernetes\\.io.serviceaccount.name}}'],
    },
    ...extraIssuers,
  ];
  const extensions = ['tools', 'secret', 'deploy'].map((name) => ({ name, enabled: true, backend: { services: [{ url: backendUrl }] } }));
  return tempConfigDir({
    'svc-cm.yaml': configMap('svc-cm', {
      'workload.config': YAML.stringify(workloads),
      'extension.config': YAML.stringify({ extensions }),
      'accounts.ci': 'login',
    }),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': WORKLOAD_POLICY, 'policy.default': '' }),
    'svc-secret.yaml': secret('svc-secret', {
      'server.secretkey': 'workload-test-secret-key-0123456789',
      'admin.password': bcrypt.hashSync('admin-pass-1', 4),
      'accounts.ci.password': bcrypt.hashSync('ci-pass-1', 4),
    }),
  });
}

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export async function exchange(url: string, subjectToken: string, as: 'form' | 'json' = 'form', extra: Record<string, string> = {}): Promise<Answer> {
  const params = { grant_type: GRANT, subject_token: subjectToken, subject_token_type: JWT_TYPE, ...extra };
  const response = await fetch(`${url}/api/v1/session/exchange`, as === 'form'
    ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params).toString() }
    : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
}
