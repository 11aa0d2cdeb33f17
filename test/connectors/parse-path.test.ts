/**
 * Parsing connector configs (and so `svc-server validate`) loads no connector library: the
 * implementations keep ldapts, @node-saml/node-saml and openid-client behind a dynamic import(), out of the
 * parse path. A child process refuses to resolve either package, then parses every type.
 */
import { expect } from 'chai';
import { runEntry } from '../helpers/run.js';

describe('the connector parse path', () => {
  it('parses a connector of every type without loading ldapts, @node-saml/node-saml or openid-client', async () => {
    const { code, stdout, stderr } = await runEntry('test/helpers/parse-every-connector-type.ts', [], process.env, undefined, {}, ['--import', './test/helpers/refuse-connector-libraries.ts']);
    expect(stderr).to.equal('');
    expect(code).to.equal(0);
    expect(stdout).to.equal('parsed 7\nrefused\n');
  });
});
