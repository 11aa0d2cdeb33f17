/**
 * Parses settings with a connector of every type, as `svc-server validate` does, and prints
 * `parsed <n>` and then `refused` once the libraries are shown to be refused (the hook works).
 * Usage: node --import tsx --import ./test/helpers/refuse-connector-libraries.ts test/helpers/parse-every-connector-type.ts
 */
import { CONNECTOR_TYPES } from '../../connectors/registry.js';
import { SETTINGS_CM, SETTINGS_SECRET, type StoreSnapshot } from '../../src/config/manifests.js';
import { formatProblem } from '../../src/config/problems.js';
import { parseSettings } from '../../src/main/settings.js';

const CONFIGS: Record<string, string> = {
  ldap: '{ host: "ldap.example.com:636", userSearch: { baseDN: "ou=people", username: uid, idAttr: uid } }',
  saml: '{ ssoURL: "https://idp.example.com/sso", usernameAttr: name, emailAttr: email, insecureSkipSignatureValidation: true }',
  github: '{ clientID: a, clientSecret: b }',
  gitlab: '{ clientID: a, clientSecret: b }',
  oidc: '{ issuer: "https://accounts.example.com", clientID: a, clientSecret: b }',
  microsoft: '{ tenant: organizations, clientID: a, clientSecret: b }',
  google: '{ clientID: a, clientSecret: b, hostedDomains: [example.com] }',
};

const types = [...CONNECTOR_TYPES.keys()];
const missing = types.filter((type) => CONFIGS[type] === undefined);
if (missing.length > 0) throw new Error(`no config here for the type(s) ${missing.join(', ')}: add one`);
const idp = `connectors:\n${types.map((type) => `  - { type: ${type}, id: ${type}, name: ${type}, config: ${CONFIGS[type]} }`).join('\n')}\n`;
const snapshot: StoreSnapshot = {
  configMaps: new Map([[SETTINGS_CM, { name: SETTINGS_CM, file: 'cm.yaml', data: { 'idp.config': idp } }]]),
  secrets: new Map([[SETTINGS_SECRET, { name: SETTINGS_SECRET, file: 'secret.yaml', labels: {}, data: { 'server.secretkey': 'k' } }]]),
  applications: [],
};
const { settings, problems } = parseSettings(snapshot);
if (problems.length > 0) throw new Error(problems.map(formatProblem).join('\n'));
process.stdout.write(`parsed ${settings.idp?.connectors.length ?? 0}\n`);

for (const library of ['ldapts', '@node-saml/node-saml', 'openid-client']) {
  const err: unknown = await import(library).then(() => undefined, (e: unknown) => e);
  if (!String(err).includes('refused: the parse path loads')) throw new Error(`${library} was not refused: the check proves nothing`, { cause: err });
}
process.stdout.write('refused\n');
