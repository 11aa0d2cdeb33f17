/**
 * `staticClients` of idp.config under fuzzing (docs/reliability.md): variants of valid clients
 * and random lists. Never a throw; every input parses or gives problems with their key paths,
 * none repeating a secret; every client that parses gives the provider its metadata.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { clientMetadataOf } from '../../src/idp/static-clients.js';
import { parseStaticClients } from '../../src/idp/static-clients-config.js';
import { FUZZ_SECRETS, Outcomes, parseChecked } from '../helpers/config-fuzz.js';
import { fuzzOptions, leaf, mutated } from '../helpers/fuzz.js';

const VALID = [
  { id: 'wiki', name: 'Wiki', secret: '$svc-secret:fuzz.secret', redirectURIs: ['https://wiki.example.org/callback'], postLogoutRedirectURIs: ['https://wiki.example.org/'], logoURL: 'https://wiki.example.org/logo.png' },
  { id: 'cli', public: true, redirectURIs: ['http://127.0.0.1/callback', 'http://localhost:8000/cb'] },
  { id: 'app.native', public: true, redirectURIs: ['com.example.app:/oauth2redirect'], trustedPeers: [] },
];

const staticClients = fc.oneof(
  { weight: 6, arbitrary: mutated(VALID) },
  { weight: 1, arbitrary: fc.array(leaf, { maxLength: 4 }) },
  { weight: 1, arbitrary: leaf },
);

describe('static clients under fuzzing', function () {
  this.timeout(60_000);

  it('never throws; parses, or names each problem by its key path without a secret; a parsed client has provider metadata (400 cases, seed 3802)', () => {
    const outcomes = new Outcomes();
    fc.assert(
      fc.property(staticClients, (raw) => {
        let clients: ReturnType<typeof parseStaticClients> = [];
        parseChecked('idp.config', (sink) => (clients = parseStaticClients(raw, FUZZ_SECRETS, sink.at('staticClients'))), outcomes);
        for (const client of clients) {
          const metadata = clientMetadataOf(client);
          expect(metadata.client_id).to.equal(client.id);
        }
      }),
      fuzzOptions(3802, 400),
    );
    expect(outcomes.clean, 'valid variants').to.be.greaterThan(10);
    expect(outcomes.refused, 'refused variants').to.be.greaterThan(100);
  });
});
