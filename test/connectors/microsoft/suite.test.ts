/**
 * The Microsoft Entra ID connector through the shared connector suite, against the local Entra
 * stand-in (test/helpers/fake-entra.ts) over HTTPS with a test CA given as rootCA, started once
 * for the file.
 */
import { microsoft } from '../../../connectors/microsoft/index.js';
import { startFakeEntra, type FakeEntra } from '../../helpers/fake-entra.js';
import { roundTrip } from '../../helpers/oauth-round-trip.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';
import { ALICE, BOB, CALLBACK, DEV, entraOptions, microsoftConfig, OPS, SECRETS } from './fixture.js';

let fake: FakeEntra | undefined;

function running(): FakeEntra {
  if (fake === undefined) throw new Error('the Entra stand-in is not running');
  return fake;
}

const members = { groups: [OPS.id, DEV.id] };

connectorSuite({
  type: 'microsoft',
  callbackUrl: CALLBACK,
  async start() {
    fake = await startFakeEntra(entraOptions(CALLBACK));
  },
  async stop() {
    await fake?.close();
  },
  config: () => microsoftConfig(running(), members),
  secrets: SECRETS,
  open: (raw, log) => openThroughType(microsoft, raw, SECRETS, log),
  login(connector, who, ctx) {
    const upstream = running();
    upstream.signedIn = who === 'member' ? ALICE.upn : BOB.upn;
    return roundTrip(connector, ctx, upstream);
  },
  member: { userId: ALICE.oid, groups: [OPS.id, DEV.id] },
  outsiderRefusal: /not a member of the groups allowed to log in here/,
  upstream: (port) => microsoftConfig({ url: `https://127.0.0.1:${port}`, caPem: running().caPem }, members),
  badConfig: { raw: { tenant: 'not a tenant', clientID: 'a', clientSecret: '$entra.clientSecret' }, problem: "tenant: 'not a tenant' must be a tenant id (a GUID), a verified domain of the tenant (contoso.onmicrosoft.com), organizations or common" },
});
