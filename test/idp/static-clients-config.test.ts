/**
 * `staticClients` of idp.config: every problem named by its key path, the same in the running
 * server's settings (live settings over the config store, which log them) and in
 * `svc-server validate`; a bad entry keeps its last good version.
 */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import YAML from 'yaml';
import { runValidate } from '../../src/commands/validate.js';
import { openDirStore } from '../../src/config/dir-store.js';
import { formatProblem } from '../../src/config/problems.js';
import { createLiveSettings } from '../../src/config/live-settings.js';
import { parseSettings } from '../../src/main/settings.js';
import { clientMetadataOf } from '../../src/idp/static-clients.js';
import type { StaticClient } from '../../src/idp/static-clients-config.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const CONNECTORS = [{ type: 'ldap', id: 'corp', name: 'Corp', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }];
const GOOD = { id: 'wiki', name: 'Wiki', secret: '$wiki.secret', redirectURIs: ['https://wiki.example.org/callback'] };

function cm(staticClients: unknown): string {
  return configMap('svc-cm', { url: 'https://svc.example.org', 'idp.config': YAML.stringify({ connectors: CONNECTORS, staticClients }) });
}

function files(staticClients: unknown): Record<string, string> {
  return {
    'svc-cm.yaml': cm(staticClients),
    'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'k'.repeat(32), 'wiki.secret': 'wiki-secret-value' }),
    'other.yaml': secret('other', { key: 'v' }, {}),
  };
}

function collector(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  return { stream: new Writable({ write(c: Buffer, _e, done) { chunks.push(c.toString()); done(); } }), text: () => chunks.join('') };
}

/** The problems `svc-server validate` prints, and those the server's live settings hold, for one config. */
async function problemsOf(staticClients: unknown): Promise<{ validate: string[]; server: string[]; served: readonly StaticClient[]; exit: number }> {
  const dir = tempConfigDir(files(staticClients));
  try {
    const out = collector();
    const err = collector();
    const exit = await runValidate(dir, out.stream, err.stream);
    const validate = err.text().split('\n').filter((line) => line.startsWith('svc-cm'));
    const store = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
    const live = createLiveSettings(store, parseSettings, pino({ level: 'silent' }));
    try {
      return { validate, server: live.problems().map(formatProblem), served: live.current().idp?.staticClients ?? [], exit };
    } finally {
      live.close();
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const AT = 'svc-cm: idp.config: staticClients';

describe('idp/static-clients-config: staticClients of idp.config', function () {
  cleanUpTempDirs();
  it('serves a good confidential and a good public client, with no problem', async function () {
    const { validate, server, served, exit } = await problemsOf([GOOD, { id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/cb', 'com.example.app:/cb'] }]);
    expect({ validate, server, exit }).to.deep.equal({ validate: [], server: [], exit: 0 });
    expect(served.map((c) => [c.id, c.public, c.secret])).to.deep.equal([['wiki', false, 'wiki-secret-value'], ['cli', true, undefined]]);
    // Off by default: a client introspects only its own tokens.
    expect(served.map((c) => c.introspection)).to.deep.equal(['own', 'own']);
  });

  it('serves introspection: any as given', async function () {
    const { server, served } = await problemsOf([{ ...GOOD, introspection: 'any' }]);
    expect(server).to.deep.equal([]);
    expect(served.map((c) => c.introspection)).to.deep.equal(['any']);
  });

  const cases: [what: string, clients: unknown[], problem: string][] = [
    ['a duplicate id', [GOOD, { ...GOOD, name: 'Again' }], `${AT}[1].id: 'wiki' is used twice; the first one is used`],
    ["the id 'svc'", [{ ...GOOD, id: 'svc' }], `${AT}[0].id: 'svc' is svc's own client; choose another id`],
    ["the id 'svc-cli'", [{ ...GOOD, id: 'svc-cli' }], `${AT}[0].id: 'svc-cli' is svc's own client; choose another id`],
    ['a redirect URI that is not absolute', [{ ...GOOD, redirectURIs: ['/callback'] }], `${AT}[0].redirectURIs[0]: '/callback' is not an absolute URI`],
    ['a redirect URI with a fragment', [{ ...GOOD, redirectURIs: ['https://wiki.example.org/cb#x'] }], `${AT}[0].redirectURIs[0]: 'https://wiki.example.org/cb#x' must not have a fragment (#)`],
    ['a post-logout URI with a fragment', [{ ...GOOD, postLogoutRedirectURIs: ['https://wiki.example.org/#out'] }], `${AT}[0].postLogoutRedirectURIs[0]: 'https://wiki.example.org/#out' must not have a fragment (#)`],
    ['no redirect URI', [{ ...GOOD, redirectURIs: [] }], `${AT}[0].redirectURIs: at least one redirect URI`],
    ['a confidential client without a secret', [{ id: 'wiki', redirectURIs: ['https://wiki.example.org/cb'] }],
      `${AT}[0].secret: required for a confidential client: a secret reference ($<key> of svc-secret or $<secret>:<key>), or public: true`],
    ['a secret in plain text', [{ ...GOOD, secret: 'hunter2hunter2' }], `${AT}[0].secret: must be a secret reference ($<key> of svc-secret or $<secret>:<key>), not the secret itself`],
    ['a reference to a missing key', [{ ...GOOD, secret: '$nope.secret' }], `${AT}[0].secret: references key 'nope.secret' of Secret 'svc-secret', which has no such key`],
    ['a reference to a missing secret', [{ ...GOOD, secret: '$gone:key' }], `${AT}[0].secret: references Secret 'gone', which does not exist`],
    ['a reference to a secret without the label', [{ ...GOOD, secret: '$other:key' }],
      `${AT}[0].secret: references secret 'other', which lacks the label app.kubernetes.io/part-of: svc`],
    ['a public client with a secret', [{ ...GOOD, public: true }], `${AT}[0].secret: a public client has no secret: remove it, or remove public: true`],
    ['a custom scheme on a confidential client', [{ ...GOOD, redirectURIs: ['com.example.app:/cb'] }],
      `${AT}[0].redirectURIs[0]: 'com.example.app:/cb': a confidential client must use an http or https URI (custom schemes are for public clients)`],
    ['trustedPeers', [{ ...GOOD, trustedPeers: ['other'] }],
      `${AT}[0].trustedPeers: not supported: svc issues no tokens for one client to another (audience:server:client_id: scopes are dropped); register the other application as its own client`],
    ['a logo that is not an http(s) URL', [{ ...GOOD, logoURL: 'javascript:alert(1)' }], `${AT}[0].logoURL: 'javascript:alert(1)' must be an absolute http or https URL`],
    ['a back-channel logout URI that is not http(s)', [{ ...GOOD, backchannelLogoutUri: 'ftp://wiki.example.org/bc' }], `${AT}[0].backchannelLogoutUri: 'ftp://wiki.example.org/bc' must be an absolute http or https URL`],
    ['a back-channel logout URI with a fragment', [{ ...GOOD, backchannelLogoutUri: 'https://wiki.example.org/bc#x' }], `${AT}[0].backchannelLogoutUri: 'https://wiki.example.org/bc#x' must not have a fragment (#)`],
    ['introspection on a public client', [{ id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/cb'], introspection: 'any' }],
      `${AT}[0].introspection: a public client cannot introspect tokens (it has no secret to authenticate with); remove introspection, or remove public: true`],
    ['an introspection reach that is neither own nor any', [{ ...GOOD, introspection: 'all' }], `${AT}[0].introspection: 'all' must be one of 'own', 'any'`],
    ['an unknown key', [{ ...GOOD, secretEnv: 'X' }], `${AT}[0].secretEnv: unknown key`],
    ['not a list', 'wiki' as unknown as unknown[], `${AT}: must be a list`],
  ];
  for (const [what, clients, problem] of cases) {
    it(`names ${what} by its key path, in the server and in validate, and serves no such client`, async function () {
      const { validate, server, served, exit } = await problemsOf(clients);
      expect(server, 'server').to.deep.equal([problem]);
      expect(validate, 'validate').to.deep.equal([problem]);
      expect(exit).to.equal(1);
      expect(served.map((c) => c.id)).to.deep.equal(what === 'a duplicate id' ? ['wiki'] : []);
    });
  }

  it('never repeats a plain-text secret in the problem', async function () {
    const { validate } = await problemsOf([{ ...GOOD, secret: 'hunter2hunter2' }]);
    expect(validate.join('\n')).not.to.include('hunter2');
  });

  it('keeps the last good version of a client that turns bad, and drops a removed one', async function () {
    const dir = tempConfigDir(files([GOOD, { id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/cb'] }]));
    const store = await openDirStore({ dir, log: pino({ level: 'silent' }), watch: false });
    const live = createLiveSettings(store, parseSettings, pino({ level: 'silent' }));
    const reload = async (clients: unknown[], n: number) => {
      writeFileSync(join(dir, 'svc-cm.yaml'), cm(clients));
      await store.updateSecret('svc-secret', () => ({ set: { 'reload.mark': String(n) } }));
    };
    try {
      await reload([{ ...GOOD, redirectURIs: ['https://wiki.example.org/cb#bad'] }, { id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/cb'] }], 1);
      expect(live.problems().map(formatProblem)).to.deep.equal([`${AT}[0].redirectURIs[0]: 'https://wiki.example.org/cb#bad' must not have a fragment (#)`]);
      expect(live.current().idp?.staticClients.map((c) => [c.id, c.redirectURIs])).to.deep.equal([
        ['wiki', ['https://wiki.example.org/callback']], ['cli', ['http://127.0.0.1/cb']],
      ]);
      await reload([{ id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/other'] }], 2);
      expect(live.problems()).to.deep.equal([]);
      expect(live.current().idp?.staticClients.map((c) => [c.id, c.redirectURIs])).to.deep.equal([['cli', ['http://127.0.0.1/other']]]);
    } finally {
      live.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('what a registration allows (clientMetadataOf)', function () {
    const base: StaticClient = { id: 'x', name: 'X', public: false, secret: 's', redirectURIs: ['https://x.example.org/cb'], postLogoutRedirectURIs: ['https://x.example.org/'] };

    it('a confidential client: the code flow and refresh, client_secret_basic, its own URIs, no device flow', function () {
      expect(clientMetadataOf(base)).to.deep.include({
        client_id: 'x', client_name: 'X', client_secret: 's', application_type: 'web', token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        redirect_uris: ['https://x.example.org/cb'], post_logout_redirect_uris: ['https://x.example.org/'],
      });
    });

    it('a client with a back-channel logout URI: logout tokens there, with sid (so its ID tokens carry sid too)', function () {
      expect(clientMetadataOf({ ...base, backchannelLogoutUri: 'https://x.example.org/bc' })).to.deep.include({ backchannel_logout_uri: 'https://x.example.org/bc', backchannel_logout_session_required: true });
      expect(clientMetadataOf(base)).not.to.have.property('backchannel_logout_uri');
    });

    it('a public client: no secret, the device flow too, native (any loopback port) when its URIs allow it', function () {
      const native = clientMetadataOf({ ...base, public: true, redirectURIs: ['http://127.0.0.1/cb'], postLogoutRedirectURIs: [] });
      expect(native).to.deep.include({ token_endpoint_auth_method: 'none', application_type: 'native' });
      expect(native).not.to.have.property('client_secret');
      expect(native['grant_types']).to.include('urn:ietf:params:oauth:grant-type:device_code');
      expect(clientMetadataOf({ ...base, public: true, redirectURIs: ['http://spa.example.org/cb'] })).to.have.property('application_type', 'web');
    });
  });
});
