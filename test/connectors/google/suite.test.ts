/**
 * The Google connector through the shared connector suite, against the local Google stand-in
 * (test/helpers/fake-google.ts) over HTTPS with a test CA given as rootCA, and the real upstream
 * fetch (the one TLS policy, as openThroughType opens every connector), started once for the file.
 */
import { google } from '../../../connectors/google/index.js';
import { startFakeGoogle, type FakeGoogle } from '../../helpers/fake-google.js';
import { roundTrip } from '../../helpers/oauth-round-trip.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';
import { ALICE_GROUPS, CALLBACK, CLIENT_ID, fakeOptions, googleConfig, secrets } from './fixture.js';

let fake: FakeGoogle | undefined;

function running(): FakeGoogle {
  if (fake === undefined) throw new Error('the Google stand-in is not running');
  return fake;
}

connectorSuite({
  type: 'google',
  callbackUrl: CALLBACK,
  async start() {
    fake = await startFakeGoogle(fakeOptions());
  },
  async stop() {
    await fake?.close();
  },
  config: () => googleConfig(running(), { groups: ALICE_GROUPS }),
  get secrets() {
    return secrets(running());
  },
  open: (raw, log) => openThroughType(google, raw, secrets(running()), log),
  login(connector, who, ctx) {
    const upstream = running();
    upstream.signedIn = who === 'member' ? 'alice@acme.example' : 'bob@acme.example';
    return roundTrip(connector, ctx, upstream);
  },
  member: { userId: '100000000000000000001', groups: ALICE_GROUPS },
  outsiderRefusal: /not a member of the groups allowed to log in here/,
  upstream: (port) => googleConfig({ url: `https://127.0.0.1:${port}`, caPem: running().caPem }),
  badConfig: { raw: { clientID: CLIENT_ID, clientSecret: '$google.clientSecret', hostedDomains: ['acme'] }, problem: "hostedDomains[0]: 'acme' is not a domain name (such as example.com)" },
});
