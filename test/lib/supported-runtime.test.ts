/** The entry points' runtime gate: Node 24 and later start, older lines are refused with a way out. */
import { expect } from 'chai';
import { SUPPORTED_MAJOR, unsupportedRuntime } from '../../src/lib/supported-runtime.js';

describe('supported runtime', () => {
  it('accepts the pinned line and later ones', () => {
    expect(SUPPORTED_MAJOR).to.equal(24);
    for (const version of ['v24.0.0', 'v24.21.0', 'v26.10.0']) expect(unsupportedRuntime(version), version).to.equal(undefined);
  });

  it('refuses Node 20 and 22, and a version it cannot read, naming npm and Node 24 as the ways out', () => {
    for (const version of ['v20.20.2', 'v22.19.0', 'v23.11.1', 'garbage']) {
      const problem = unsupportedRuntime(version);
      expect(problem, version).to.include(`this is ${version}`);
      expect(problem).to.include('npm start, npx svc').and.include('install Node.js 24');
    }
  });
});
