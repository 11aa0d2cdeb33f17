/**
 * The GitHub connector through the shared connector suite, against the local GitHub stand-in
 * (test/helpers/fake-github.ts) over HTTPS with a test CA given as rootCA, and the real
 * upstream fetch (the one TLS policy, as openThroughType opens every connector), started once for the file.
 */
import { github } from '../../../connectors/github/index.js';
import { startFakeGithub, type FakeGithub } from '../../helpers/fake-github.js';
import { roundTrip } from '../../helpers/oauth-round-trip.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';
import { ALICE_GROUPS, CALLBACK, CLIENT_ID, CLIENT_SECRET, githubConfig, SECRETS, USERS } from './fixture.js';

let fake: FakeGithub | undefined;

function running(): FakeGithub {
  if (fake === undefined) throw new Error('the GitHub stand-in is not running');
  return fake;
}

connectorSuite({
  type: 'github',
  callbackUrl: CALLBACK,
  async start() {
    fake = await startFakeGithub({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, users: USERS });
  },
  async stop() {
    await fake?.close();
  },
  config: () => githubConfig(running()),
  secrets: SECRETS,
  open: (raw, log) => openThroughType(github, raw, SECRETS, log),
  login(connector, who, ctx) {
    const upstream = running();
    upstream.signedIn = who === 'member' ? 'alice' : 'bob';
    return roundTrip(connector, ctx, upstream);
  },
  member: { userId: '1001', groups: ALICE_GROUPS },
  outsiderRefusal: /not a member of the organizations or teams allowed to log in here/,
  upstream: (port) => githubConfig({ host: `127.0.0.1:${port}`, caPem: running().caPem }),
  badConfig: { raw: { clientID: CLIENT_ID, clientSecret: '$github.clientSecret', hostName: 'https://github.corp.example.com' }, problem: `hostName: 'https://github.corp.example.com' must be a host name with an optional :port, without a scheme or "/"` },
});
