/**
 * routeExtensionRequest: the checks in DESIGN §6 order, as a table. Each row changes one thing
 * from a request that passes, and names the error (and its first words) that must come first.
 */
import { expect } from 'chai';
import type { AppCatalog } from '../../src/apps/catalog.js';
import { InvalidRequest, Unauthenticated } from '../../src/errors.js';
import { routeExtensionRequest, type AccessSettings, type ExtensionRequest } from '../../src/extensions/access.js';
import type { ExtensionConfig } from '../../src/extensions/config.js';
import type { Principal } from '../../src/principal.js';

const alice: Principal = { username: 'alice', groups: ['team-a'], issuer: 'svc', kind: 'session', tokenId: 't', expiresAt: undefined };
const extensions: ExtensionConfig[] = [
  { name: 'metrics', enabled: true, idleConnTimeoutMs: 60_000, contentSecurityPolicy: undefined, services: [{ url: 'http://metrics' }] },
  { name: 'off', enabled: false, idleConnTimeoutMs: 60_000, contentSecurityPolicy: undefined, services: [{ url: 'http://off' }] },
  { name: 'split', enabled: true, idleConnTimeoutMs: 60_000, contentSecurityPolicy: undefined, services: [{ url: 'http://a', clusterName: 'a' }, { url: 'http://b', clusterName: 'b' }] },
];
const catalog: AppCatalog = {
  applications: new Map([
    ['ns/app-a', { namespace: 'ns', name: 'app-a', project: 'team-a', destination: { name: 'a' } }],
    ['ns/app-z', { namespace: 'ns', name: 'app-z', project: 'team-z', destination: { name: 'z' } }],
  ]),
  clusters: [{ name: 'a', server: 'https://a' }],
};
const settings: AccessSettings = { extensions, catalog };
/** Rights: team-a may use every extension of project team-a, and `metrics` of every project. */
const rights = {
  allows: (caller: Principal, resource: string, action: string, object: string) =>
    [caller.username, ...caller.groups].includes('team-a') && resource === 'extensions' && action === 'get' && (object.startsWith('team-a/') || object === '*/metrics'),
};

const ok: ExtensionRequest = { name: 'metrics', principal: alice, authError: undefined, application: 'ns/app-a', method: 'GET' };

const TABLE: readonly (readonly [string, Partial<ExtensionRequest>, string | undefined, string])[] = [
  ['passes with a known application the rights allow', {}, undefined, 'http://metrics'],
  ['passes without an application when an every-project rule allows it', { application: undefined }, undefined, 'http://metrics'],
  ['404 for an unknown extension, even without a caller', { name: 'nope', principal: undefined }, 'extension_not_found', "extension 'nope' is not configured"],
  ['404 for a disabled extension, before authentication', { name: 'off', principal: undefined }, 'extension_not_found', "extension 'off' is not enabled"],
  ['401 without a caller', { principal: undefined }, 'unauthenticated', 'no valid token'],
  ['401 with the reason a sent token was refused', { principal: undefined, authError: new Unauthenticated('token is revoked; log in again') }, 'unauthenticated', 'token is revoked'],
  ['400 for a malformed application, after authentication', { application: 'Not/A/Name' }, 'invalid_request', 'Svc-Application-Name must be'],
  ['400 raised at the application step for a refused way of naming it', { application: new InvalidRequest('conflict') }, 'invalid_request', 'conflict'],
  ['403 for an application that does not exist', { application: 'ns/nope' }, 'application_not_found', "application 'ns/nope' does not exist"],
  ['403 naming the rule the rights lack', { name: 'split', application: 'ns/app-z' }, 'permission_denied', "'alice' may not use extension 'split'"],
  ['403 before the backend step: without an application the object is */split', { name: 'split', application: undefined }, 'permission_denied', "no rights rule allows extensions, *, */split nor extensions, get, */split"],
  ['the backend of the application\'s cluster', { name: 'split' }, undefined, 'http://a'],
];

describe('extensions/access: the checks in order', () => {
  for (const [what, change, code, expected] of TABLE) {
    it(what, () => {
      const run = () => routeExtensionRequest({ ...ok, ...change }, settings, rights);
      if (code === undefined) {
        expect(run().backend.url).to.equal(expected);
        return;
      }
      let thrown: unknown;
      try {
        run();
      } catch (err: unknown) {
        thrown = err;
      }
      expect(thrown, 'must refuse').to.have.property('code', code);
      expect((thrown as Error).message).to.contain(expected);
    });
  }
});

describe('extensions/access: the application name', () => {
  const code = (application: string): string | undefined => {
    try {
      routeExtensionRequest({ ...ok, application }, settings, rights);
      return undefined;
    } catch (err: unknown) {
      return (err as { code?: string }).code;
    }
  };

  it('takes <DNS-1123 label>/<DNS-1123 subdomain> up to 63 and 253 characters, and an empty header as none', () => {
    for (const name of ['a/b', 'ns-1/app.x-y', 'ns/a.b.c', '0/9', `${'n'.repeat(63)}/a`, `ns/${'a'.repeat(253)}`, `ns/${'a'.repeat(61)}.${'b'.repeat(63)}`]) {
      expect(code(name), name).to.equal('application_not_found');
    }
    expect(code('')).to.equal(undefined);
  });

  it('refuses anything else as a malformed header', () => {
    const bad = [
      'A/b', 'ns/App', '-ns/a', 'ns-/a', 'ns/a-', 'ns/-a', 'ns/a..b', 'ns/a.-b', 'ns/a-.b', 'ns/.a', 'ns/a.', `${'n'.repeat(64)}/a`, `ns/${'a'.repeat(254)}`,
      'ns/a/b', 'ns/', '/a', 'ns', 'ns/a_b', 'n.s/a', ' ns/a', 'ns/a ', 'ns/a\n', 'x\nns/a',
    ];
    for (const name of bad) expect(code(name), JSON.stringify(name)).to.equal('invalid_request');
  });
});
