import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import YAML from 'yaml';
import { runValidate } from '../../src/commands/validate.js';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import { parseWorkloadConfig, type WorkloadIssuer } from '../../src/workload/config.js';
import { configMap, secret } from '../helpers/manifests.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function parse(value: unknown, previous?: readonly WorkloadIssuer[]): { issuers: readonly WorkloadIssuer[]; problems: string[] } {
  const sink = new ProblemSink();
  const issuers = parseWorkloadConfig(typeof value === 'string' ? value : YAML.stringify(value), new Map(), sink.scoped('svc-cm').at('workload.config'), previous);
  return { issuers, problems: sink.problems.map(formatProblem) };
}

const github = { name: 'github', issuer: 'https://token.actions.githubusercontent.com', audiences: ['https://svc.example.com'], claims: { repository_owner: 'my-org', ref: ['refs/heads/main', 'refs/tags/v*'] } };

describe('workload.config', () => {
  cleanUpTempDirs();
  it('parses an entry with its defaults: subject {{sub}}, no groups, tokens of 1h', () => {
    const { issuers, problems } = parse([github]);
    expect(problems).to.deep.equal([]);
    const [entry] = issuers;
    expect(entry).to.include({ name: 'github', issuer: github.issuer, maxTokenLifetimeMs: 3_600_000 });
    expect(entry?.subject.source).to.equal('{{sub}}');
    expect(entry?.groups).to.deep.equal([]);
    expect(entry?.claims).to.deep.equal([
      { path: ['repository_owner'], source: 'repository_owner', equals: 'my-org' },
      { path: ['ref'], source: 'ref', globs: ['refs/heads/main', 'refs/tags/v*'] },
    ]);
  });

  it('reaches the kubernetes.io claim with \\. and takes templates and list claims as groups', () => {
    const { issuers, problems } = parse([{
      name: 'k8s', issuer: 'https://kubernetes.default.svc', jwksURL: 'https://kubernetes.default.svc/openid/v1/jwks', rootCA: PEM, audiences: ['svc'],
      claims: { 'kubernetes\\.io.namespace': 'ci' }, subject: '{{kubernetes\\.io.serviceaccount.name}}', groups: ['ns-{{kubernetes\\.io.namespace}}', { claim: 'groups' }], maxTokenLifetime: '15m',
    }]);
    expect(problems).to.deep.equal([]);
    expect(issuers[0]?.claims[0]?.path).to.deep.equal(['kubernetes.io', 'namespace']);
    expect(issuers[0]?.groups[1]).to.deep.equal({ claim: ['groups'], source: 'groups' });
    expect(issuers[0]?.maxTokenLifetimeMs).to.equal(900_000);
  });

  it('reports every problem of an entry with its key path', () => {
    const { issuers, problems } = parse([{ name: 'bad:name', issuer: 'http://issuer.example', audiences: [], subject: '{{sub', maxTokenLifetime: '25h', claims: { 'a..b': 'x' }, extra: 1 }]);
    expect(issuers).to.deep.equal([]);
    expect(problems).to.have.members([
      'svc-cm: workload.config[0].extra: unknown key',
      "svc-cm: workload.config[0].name: 'bad:name': letters, digits, \".\", \"_\" and \"-\" only",
      "svc-cm: workload.config[0].issuer: 'http://issuer.example' is not an https:// URL without query or fragment (an issuer is only trusted over TLS)",
      'svc-cm: workload.config[0].audiences: must list at least one audience',
      "svc-cm: workload.config[0].subject: '{{sub' is not a template: has an unbalanced {{ or }}",
      "svc-cm: workload.config[0].claims.a..b: 'a..b' is not a claim path: it has an empty segment (a name between two dots; write a dot in a name as \\.)",
      "svc-cm: workload.config[0].maxTokenLifetime: '25h' is not a duration from 1s to 24h (for example 15m, 1h)",
      'svc-cm: workload.config[0]: entry is invalid and is ignored',
    ]);
  });

  it('requires audiences', () => {
    const { problems } = parse([{ name: 'x', issuer: 'https://x.example' }]);
    expect(problems).to.include('svc-cm: workload.config[0].audiences: is required: a list of the audiences svc accepts');
  });

  it('keeps the last good version of a bad entry, by name; a new bad entry is left out', () => {
    const good = parse([github]).issuers;
    const { issuers, problems } = parse([{ ...github, audiences: [] }, { name: 'new', issuer: 'https://new.example' }], good);
    expect(issuers).to.deep.equal(good);
    expect(problems).to.include("svc-cm: workload.config[0]: entry 'github' is invalid; its previous version stays in force");
    expect(problems).to.include('svc-cm: workload.config[1]: entry is invalid and is ignored');
  });

  it('takes the first of two entries with one name or one issuer', () => {
    const { issuers, problems } = parse([github, { ...github, issuer: 'https://other.example' }, { ...github, name: 'again', issuer: `${github.issuer}/` }]);
    expect(issuers.map((i) => i.name)).to.deep.equal(['github']);
    expect(problems).to.deep.equal([
      "svc-cm: workload.config[1].name: 'github' is defined twice; the first one is used",
      `svc-cm: workload.config[2].issuer: '${github.issuer}/' is already the issuer of 'github': one entry per issuer (put every rule for it in that entry); this one is ignored`,
    ]);
  });

  it('keeps the whole previous list when the YAML is not a list or does not parse', () => {
    const good = parse([github]).issuers;
    expect(parse({ name: 'x' }, good)).to.deep.equal({ issuers: good, problems: ['svc-cm: workload.config: must be a YAML list of issuers (- name: …)'] });
    expect(parse('- [unclosed', good).issuers).to.equal(good);
  });

  it('is checked by svc-server validate', async () => {
    const dir = makeTempDir('svc-workload-validate-');
    try {
      writeFileSync(join(dir, 'svc-cm.yaml'), configMap('svc-cm', { 'workload.config': YAML.stringify([{ name: 'ci', issuer: 'https://ci.example' }]) }));
      writeFileSync(join(dir, 'svc-rbac-cm.yaml'), configMap('svc-rbac-cm', {}));
      writeFileSync(join(dir, 'svc-secret.yaml'), secret('svc-secret', { 'server.secretkey': 'k'.repeat(32) }));
      let err = '';
      const sink = (write: (s: string) => void) => new Writable({ write(chunk: Buffer, _e, done) { write(chunk.toString()); done(); } });
      const code = await runValidate(dir, sink(() => undefined), sink((s) => (err += s)));
      expect(code).to.equal(1);
      expect(err).to.include('svc-cm: workload.config[0].audiences: is required: a list of the audiences svc accepts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
