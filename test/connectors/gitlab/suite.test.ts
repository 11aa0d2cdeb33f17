/**
 * The GitLab connector through the shared connector suite, against the local GitLab stand-in
 * (test/helpers/fake-gitlab.ts) over HTTPS with a test CA given as rootCA, and the real
 * upstream fetch (the one TLS policy, as openThroughType opens every connector), started once for the file.
 */
import { gitlab } from '../../../connectors/gitlab/index.js';
import { startFakeGitlab, type FakeGitlab } from '../../helpers/fake-gitlab.js';
import { roundTrip } from '../../helpers/oauth-round-trip.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';
import { ALICE_GROUPS, CALLBACK, CLIENT_ID, CLIENT_SECRET, gitlabConfig, SECRETS, USERS } from './fixture.js';

let fake: FakeGitlab | undefined;

function running(): FakeGitlab {
  if (fake === undefined) throw new Error('the GitLab stand-in is not running');
  return fake;
}

connectorSuite({
  type: 'gitlab',
  callbackUrl: CALLBACK,
  async start() {
    fake = await startFakeGitlab({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: CALLBACK, users: USERS });
  },
  async stop() {
    await fake?.close();
  },
  config: () => gitlabConfig(running()),
  secrets: SECRETS,
  open: (raw, log) => openThroughType(gitlab, raw, SECRETS, log),
  login(connector, who, ctx) {
    const upstream = running();
    upstream.signedIn = who === 'member' ? 'alice' : 'bob';
    return roundTrip(connector, ctx, upstream);
  },
  member: { userId: '2001', groups: ALICE_GROUPS },
  outsiderRefusal: /not a member of the groups allowed to log in here/,
  upstream: (port) => gitlabConfig({ url: `https://127.0.0.1:${port}`, caPem: running().caPem }),
  badConfig: { raw: { clientID: CLIENT_ID, clientSecret: '$gitlab.clientSecret', baseURL: 'gitlab.corp.example.com' }, problem: "baseURL: 'gitlab.corp.example.com' is not an http(s) URL" },
});
