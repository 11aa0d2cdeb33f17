/** The start gate: closed while the store holds a problem at start, open for good at the first load without one. */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { ConfigProblem } from '../../src/config/problems.js';
import { createStartGate, DETAILS_IN_LOG, NOT_APPLIED, publicProblem, registerStartGateMetric } from '../../src/main/start-gate.js';

/** A store and settings whose problems the test sets, and a load that tells both listeners. */
function fakes(storeProblems: ConfigProblem[], settingsProblems: ConfigProblem[]) {
  const loads = new Set<() => void>();
  const changes = new Set<(settings: unknown, previous: unknown) => void>();
  const logged: { level: string; msg: string }[] = [];
  return {
    deps: {
      store: { problems: () => storeProblems, onLoad: (l: () => void) => (loads.add(l), () => loads.delete(l)) },
      settings: { problems: () => settingsProblems, onChange: (l: (settings: unknown, previous: unknown) => void) => (changes.add(l), () => changes.delete(l)) },
      log: { error: (_o: object, msg: string) => logged.push({ level: 'error', msg }), info: (msg: string) => logged.push({ level: 'info', msg }) },
    },
    load(store: ConfigProblem[], settings: ConfigProblem[]) {
      storeProblems = store;
      settingsProblems = settings;
      for (const l of changes) l(undefined, undefined);
      for (const l of loads) l();
    },
    logged,
    listeners: () => loads.size + changes.size,
  };
}

const badUrl: ConfigProblem = { source: 'svc-cm', path: ['url'], message: "'ftp://x' is not an http(s) URL" };
const badFile: ConfigProblem = { source: 'config/svc-rbac-cm.yaml', path: [], message: 'YAML does not parse' };

describe('start gate', () => {
  it('is open at once on a store without problems, and listens to nothing', async () => {
    const f = fakes([], []);
    const gate = createStartGate(f.deps);
    expect(gate.reason()).to.equal(undefined);
    await gate.applied;
    expect(f.listeners()).to.equal(0);
    expect(f.logged).to.deep.equal([]);
  });

  it('names every problem of the store and the settings, logs each distinct reason once, and opens for good at the first clean load', async () => {
    const f = fakes([badFile], [badUrl]);
    const gate = createStartGate(f.deps);
    expect(gate.reason()).to.equal(`${NOT_APPLIED}: config/svc-rbac-cm.yaml: does not parse; svc-cm: url: invalid value (${DETAILS_IN_LOG})`);
    f.load([badFile], [badUrl]);
    expect(f.logged).to.deep.equal([{ level: 'error', msg: `${NOT_APPLIED}: config/svc-rbac-cm.yaml: YAML does not parse; svc-cm: url: 'ftp://x' is not an http(s) URL` }]);
    f.load([], [badUrl]);
    expect(gate.reason()).to.equal(`${NOT_APPLIED}: svc-cm: url: invalid value (${DETAILS_IN_LOG})`);
    expect(f.logged).to.have.length(2);
    expect(f.logged[1]?.msg).to.equal(`${NOT_APPLIED}: svc-cm: url: 'ftp://x' is not an http(s) URL`);
    let opened = false;
    void gate.applied.then(() => (opened = true));
    f.load([], []);
    await Promise.resolve();
    expect(opened).to.equal(true);
    expect(gate.reason()).to.equal(undefined);
    expect(f.logged.at(-1)).to.deep.equal({ level: 'info', msg: 'configuration applied: the store no longer holds a problem; this replica is ready' });
    expect(f.listeners(), 'it stops listening').to.equal(0);
    // A bad edit after that is a running replica's: it keeps its last good configuration, the gate stays open.
    f.load([], [badUrl]);
    expect(gate.reason()).to.equal(undefined);
  });

  it('answers anyone with the store, the key and a category, never the value; the log has the value', () => {
    const badLine: ConfigProblem = {
      source: 'svc-rbac-cm',
      path: ['policy.csv', 'line 2'],
      message: 'expected 6 fields, the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:x, applications, get, secret-project-name/*"',
    };
    const notAUrl: ConfigProblem = { source: 'svc-cm', path: ['url'], message: "'internal.example:9/x' is not an http(s) URL" };
    const f = fakes([], [badLine, notAUrl]);
    const reason = createStartGate(f.deps).reason() ?? '';
    expect(reason).to.equal(`${NOT_APPLIED}: svc-rbac-cm: policy.csv: line 2: invalid value; svc-cm: url: invalid value (${DETAILS_IN_LOG})`);
    for (const value of ['secret-project-name', 'internal.example']) {
      expect(reason).not.to.include(value);
      expect(f.logged[0]?.msg).to.include(value);
    }
  });

  it('publicProblem: a fixed category for each kind of problem, whatever its message says', () => {
    const at = (path: (string | number)[], message: string) => publicProblem({ source: 'svc-cm', path, message });
    expect(at([], 'YAML does not parse (line 3: "password: hunter2")')).to.equal('svc-cm: does not parse');
    expect(at([], 'cannot be read: EACCES')).to.equal('svc-cm: cannot be read');
    expect(at([], 'a document is not a Kubernetes object (a map with kind and metadata)')).to.equal('svc-cm: cannot be used');
    expect(at(['polcy.default'], 'unknown key')).to.equal('svc-cm: polcy.default: unknown key');
    expect(at(['ConfigMap', 'metadata', 'name'], 'is missing')).to.equal('svc-cm: ConfigMap: metadata.name: missing');
    expect(at(['oidc.config', 'clientSecret'], "'$oidc.secret' names no key of svc-secret")).to.equal('svc-cm: oidc.config: clientSecret: invalid value');
  });

  it('svc_config_applied is 0 while the gate is shut, 1 once open', async () => {
    const f = fakes([], [badUrl]);
    const gate = createStartGate(f.deps);
    const registry = new Registry();
    registerStartGateMetric(registry, gate);
    expect(await registry.metrics()).to.match(/^svc_config_applied 0$/m);
    f.load([], []);
    expect(await registry.metrics()).to.match(/^svc_config_applied 1$/m);
  });
});
