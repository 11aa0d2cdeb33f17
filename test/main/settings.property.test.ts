/**
 * Random YAML and random manifests through the whole read path (YAML text -> readManifest ->
 * parseSettings): the only error that may ever escape is ConfigProblems.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import YAML from 'yaml';
import { readManifest, type ConfigMapObject, type SecretObject, type StoreSnapshot } from '../../src/config/manifests.js';
import { ConfigProblems, ProblemSink } from '../../src/config/problems.js';
import { parseSettings, parseSettingsStrict } from '../../src/main/settings.js';

const KEYS = [
  'url', 'admin.enabled', 'accounts.alice', 'accounts.alice.enabled', 'accounts.Bad Name', 'extension.config', 'idp.config',
  'oidc.config', 'oidc.tls.insecure.skip.verify', 'users.session.duration', 'policy.csv', 'policy.x.csv', 'policy.default', 'scopes',
  'server.secretkey', 'admin.password', 'admin.passwordMtime', 'accounts.alice.tokens', 'accounts.alice.passwordMtime',
];

/** Text that is often YAML of a plausible shape, sometimes garbage. */
const yamlText = fc.oneof(
  fc.anything({ maxDepth: 4 }).map((v) => { try { return YAML.stringify(v); } catch { return String(v); } }),
  fc.record({ extensions: fc.array(fc.record({ name: fc.string(), enabled: fc.anything(), backend: fc.anything() }, { requiredKeys: [] })) }).map((v) => YAML.stringify(v)),
  fc.record({ connectors: fc.array(fc.record({ type: fc.constantFrom('github', 'oidc', 'ldap', 'x'), id: fc.string(), name: fc.string(), config: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.constant('$a:b'), fc.constant('$k'))) }, { requiredKeys: [] })) }).map((v) => YAML.stringify(v)),
  fc.string(),
  fc.array(fc.constantFrom('p', 'g', ',', ' ', '"', '*', '/', 'role:x', 'allow', 'deny', '\n', '#', '{a,b}')).map((parts) => parts.join('')),
);

const data = fc.dictionary(fc.constantFrom(...KEYS), yamlText, { maxKeys: 8 });

const manifest = fc.oneof(
  fc.record({ kind: fc.constantFrom('ConfigMap'), metadata: fc.record({ name: fc.constantFrom('svc-cm', 'svc-rbac-cm') }), data }),
  fc.record({ kind: fc.constantFrom('Secret'), metadata: fc.record({ name: fc.constantFrom('svc-secret', 'other'), labels: fc.anything() }, { requiredKeys: ['name'] }), stringData: data, data: fc.anything() }, { requiredKeys: ['kind', 'metadata'] }),
  fc.record({ kind: fc.constant('Application'), metadata: fc.anything(), spec: fc.anything() }),
  fc.anything({ maxDepth: 3 }),
);

function snapshotFrom(docs: unknown[]): StoreSnapshot {
  const sink = new ProblemSink();
  const configMaps = new Map<string, ConfigMapObject>();
  const secrets = new Map<string, SecretObject>();
  const applications = [];
  for (const doc of docs) {
    // Round-trip through YAML text, as documents really arrive.
    let parsed: unknown;
    try {
      parsed = YAML.parse(YAML.stringify(doc), { logLevel: 'error' });
    } catch {
      continue;
    }
    const read = readManifest(parsed, 'random.yaml', sink);
    if (read?.kind === 'ConfigMap') configMaps.set(read.object.name, read.object);
    if (read?.kind === 'Secret') secrets.set(read.object.name, read.object);
    if (read?.kind === 'Application') applications.push(read.object);
  }
  return { configMaps, secrets, applications };
}

describe('settings parser under random input', () => {
  it('never throws, and strict parsing throws only ConfigProblems (2,000 cases)', () => {
    let strictFailures = 0;
    fc.assert(
      fc.property(fc.array(manifest, { maxLength: 5 }), (docs) => {
        const snapshot = snapshotFrom(docs);
        const first = parseSettings(snapshot);
        parseSettings(snapshot, first.settings);
        try {
          parseSettingsStrict(snapshot);
        } catch (err: unknown) {
          strictFailures++;
          expect(err).to.be.instanceOf(ConfigProblems);
        }
      }),
      { numRuns: 2000 },
    );
    // The generator must reach the failure path too, or the property proves nothing.
    expect(strictFailures).to.be.greaterThan(100);
  });
});
