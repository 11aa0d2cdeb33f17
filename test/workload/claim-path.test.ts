import { expect } from 'chai';
import { claimAt, fillTemplate, formatClaimPath, parseClaimPath, parseTemplate, type Template } from '../../src/workload/claim-path.js';

describe('workload claim paths and templates', () => {
  const claims = { sub: 'system:serviceaccount:ci:builder', 'kubernetes.io': { namespace: 'ci', serviceaccount: { name: 'builder' } }, 'a.b': 'flat', run: 7, ok: true, list: ['x'] };

  it('splits on dots and reads \\. as a dot inside a name', () => {
    expect(parseClaimPath('kubernetes\\.io.namespace')).to.deep.equal(['kubernetes.io', 'namespace']);
    expect(parseClaimPath('a\\\\b')).to.deep.equal(['a\\b']);
    expect(formatClaimPath(['kubernetes.io', 'namespace'])).to.equal('kubernetes\\.io.namespace');
  });

  it('names what is wrong with a bad path', () => {
    expect(parseClaimPath('')).to.equal('is empty');
    expect(parseClaimPath('a..b')).to.match(/^has an empty segment/);
    expect(parseClaimPath('a.')).to.equal('ends with a dot');
    expect(parseClaimPath('a\\b')).to.equal("'\\' must be followed by '.' or '\\' (at character 2)");
  });

  it('reads nested claims, and never a top-level claim spelled like a nested path', () => {
    expect(claimAt(claims, ['kubernetes.io', 'serviceaccount', 'name'])).to.equal('builder');
    expect(claimAt(claims, ['a', 'b'])).to.equal(undefined);
    expect(claimAt(claims, ['a.b'])).to.equal('flat');
    expect(claimAt(claims, ['list', '0'])).to.equal(undefined);
    expect(claimAt(claims, ['toString'])).to.equal(undefined);
  });

  it('fills templates with scalar claims and names the missing one', () => {
    const template = parseTemplate('{{ kubernetes\\.io.namespace }}/{{kubernetes\\.io.serviceaccount.name}}#{{run}}{{ok}}') as Template;
    expect(fillTemplate(template, claims)).to.deep.equal({ value: 'ci/builder#7true' });
    expect(fillTemplate(parseTemplate('{{list}}') as Template, claims)).to.deep.equal({ missing: 'list' });
    expect(fillTemplate(parseTemplate('x-{{nope}}') as Template, claims)).to.deep.equal({ missing: 'nope' });
  });

  it('refuses unbalanced braces and bad placeholders', () => {
    expect(parseTemplate('{{sub}')).to.equal('has an unbalanced {{ or }}');
    expect(parseTemplate('a}}')).to.equal('has an unbalanced {{ or }}');
    expect(parseTemplate('{{a..b}}')).to.match(/^placeholder \{\{a\.\.b\}\}: the claim path has an empty segment/);
  });
});
