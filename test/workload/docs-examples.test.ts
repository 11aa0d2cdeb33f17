/** The workload.config examples of docs/workload-identity.md parse without a problem, so the docs stay true. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import { parseWorkloadConfig } from '../../src/workload/config.js';
import { ROOT } from '../helpers/run.js';

describe('docs/workload-identity.md examples', () => {
  const md = readFileSync(`${ROOT}docs/workload-identity.md`, 'utf8');
  const examples = [...md.matchAll(/```yaml\n(data:\n[\s\S]*?)```/g)].map((m) => m[1] as string);

  it('has the GitHub Actions and the Kubernetes example, and both parse', () => {
    expect(examples).to.have.length(2);
    const parsed = examples.map((text) => {
      const data = (YAML.parse(text.replace("… the cluster's CA …", 'MIIB')) as { data: Record<string, string> }).data;
      const sink = new ProblemSink();
      const issuers = parseWorkloadConfig(data['workload.config'], new Map(), sink.scoped('svc-cm').at('workload.config'));
      expect(sink.problems.map(formatProblem)).to.deep.equal([]);
      return issuers[0];
    });
    expect(parsed[0]?.name).to.equal('github');
    expect(parsed[1]?.claims[0]).to.deep.include({ path: ['kubernetes.io', 'namespace'], globs: ['ci', 'deploy-*'] });
    expect(parsed[1]?.subject.source).to.equal('{{kubernetes\\.io.namespace}}/{{kubernetes\\.io.serviceaccount.name}}');
  });
});
