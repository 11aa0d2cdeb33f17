import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { DEFAULT_GOOGLE_PROMPT, GOOGLE_DIRECTORY_URL, GOOGLE_ISSUER, parseGoogleConfig } from '../../../connectors/google/config.js';
import { DEFAULT_TOKEN_URI } from '../../../connectors/google/service-account.js';
import { secretLookup } from '../connector-suite.js';
import { AT, parseWithProblems } from '../helpers.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const keyFile = (fields: Record<string, unknown> = {}): string => JSON.stringify({ type: 'service_account', client_email: 'groups@p.iam.gserviceaccount.com', private_key: rsa, private_key_id: 'k1', ...fields });

const SECRETS = secretLookup({ 'google.key': keyFile(), 'google.noTokenUri': keyFile(), 'google.ec': keyFile({ private_key: ec }), 'google.user': keyFile({ type: 'authorized_user' }), 'google.path': '/etc/google/key.json', 'google.badUri': keyFile({ token_uri: 'file:///x' }) });
const parse = (raw: unknown) => parseWithProblems(parseGoogleConfig, raw, SECRETS);

const GOOD = { clientID: 'abc.apps.googleusercontent.com', clientSecret: 'shh' };
const GROUPS = { serviceAccountKey: '$google.key', domainToAdminEmail: { 'Acme.example': 'admin@acme.example' } };

describe('google connector config', () => {
  it('takes a minimal config and fills in the defaults (Google\'s own endpoints)', () => {
    const { config, problems } = parse(GOOD);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({ ...GOOD, scopes: ['profile', 'email'], fetchTransitiveGroupMembership: false, promptType: DEFAULT_GOOGLE_PROMPT, issuer: GOOGLE_ISSUER, directoryURL: GOOGLE_DIRECTORY_URL });
    expect([GOOGLE_ISSUER, GOOGLE_DIRECTORY_URL, DEFAULT_TOKEN_URI]).to.deep.equal(['https://accounts.google.com', 'https://admin.googleapis.com', 'https://oauth2.googleapis.com/token']);
  });

  it('reads the service account\'s key file from a Secret, and the domains (lower case) with their administrators', () => {
    const { config, problems } = parse({ ...GOOD, ...GROUPS, hostedDomains: ['ACME.example'], groups: ['ops@acme.example'], fetchTransitiveGroupMembership: true });
    expect(problems).to.deep.equal([]);
    expect(config?.serviceAccountKey).to.deep.equal({ clientEmail: 'groups@p.iam.gserviceaccount.com', privateKeyPem: rsa, privateKeyId: 'k1', tokenUri: DEFAULT_TOKEN_URI });
    expect(config?.hostedDomains).to.deep.equal(['acme.example']);
    expect([...(config?.domainToAdminEmail ?? [])]).to.deep.equal([['acme.example', 'admin@acme.example']]);
  });

  it('names every bad key with its path, in one run, never quoting the key file', () => {
    const { config, problems } = parse({
      clientID: '',
      hostedDomains: ['not a domain'],
      groups: [],
      domainToAdminEmail: { 'acme.example': 'nobody', 'bad key!': 'a@b.example' },
      serviceAccountKey: '$google.ec',
      fetchTransitiveGroupMembership: 'yes',
      issuer: 'accounts.google.com',
      serviceAccountFilePath: '/etc/key.json',
      adminEmail: 'admin@acme.example',
      groupsFilter: '.*',
    });
    expect(config).to.equal(undefined);
    expect(problems).to.have.members([
      `${AT}.clientID: must not be empty`,
      `${AT}.clientSecret: required`,
      `${AT}.hostedDomains[0]: 'not a domain' is not a domain name (such as example.com)`,
      `${AT}.groups: must not be empty: leave it out to keep every group`,
      `${AT}.domainToAdminEmail.acme.example: 'nobody' is not an email address`,
      `${AT}.domainToAdminEmail.bad key!: 'bad key!' is not a domain name or *`,
      `${AT}.serviceAccountKey: must be the content of a service account's JSON key file: its "private_key" is not an RSA private key in PEM`,
      `${AT}.fetchTransitiveGroupMembership: 'yes' must be true or false`,
      `${AT}.issuer: 'accounts.google.com' is not an http(s) URL`,
      `${AT}.serviceAccountFilePath: '/etc/key.json' is not taken: svc reads no files; put the key file's content in a Secret and name it in serviceAccountKey`,
      `${AT}.adminEmail: 'admin@acme.example' is Dex's older key: use domainToAdminEmail (with * for every domain)`,
      `${AT}.groupsFilter: unknown key`,
    ]);
  });

  it('refuses a key file that is a path, of another kind, or sends the grant elsewhere than http(s)', () => {
    const of = (ref: string) => parse({ ...GOOD, ...GROUPS, serviceAccountKey: ref }).problems;
    expect(of('$google.path')).to.deep.equal([`${AT}.serviceAccountKey: must be the content of a service account's JSON key file: it is not JSON (a file path is not taken: put the file itself in a Secret)`]);
    expect(of('$google.user')).to.deep.equal([`${AT}.serviceAccountKey: must be the content of a service account's JSON key file: its "type" is not "service_account"`]);
    expect(of('$google.badUri')).to.deep.equal([`${AT}.serviceAccountKey: must be the content of a service account's JSON key file: its "token_uri" is not an http(s) URL`]);
  });

  it('refuses a key written into the ConfigMap instead of a Secret', () => {
    expect(parse({ ...GOOD, ...GROUPS, serviceAccountKey: keyFile() }).problems).to.deep.equal([`${AT}.serviceAccountKey: must be a secret reference ($<key> or $<secret>:<key>): a private key does not belong in a ConfigMap`]);
  });

  it('needs the service account and the administrators together, and both for groups and the transitive walk', () => {
    expect(parse({ ...GOOD, serviceAccountKey: '$google.key' }).problems).to.deep.equal([`${AT}.domainToAdminEmail: required with serviceAccountKey: the administrator the service account acts as, per domain (or * for every domain)`]);
    expect(parse({ ...GOOD, domainToAdminEmail: { '*': 'a@acme.example' } }).problems).to.deep.equal([`${AT}.serviceAccountKey: required with domainToAdminEmail: the service account that acts as those administrators`]);
    expect(parse({ ...GOOD, groups: ['ops@acme.example'], fetchTransitiveGroupMembership: true }).problems).to.have.members([
      `${AT}.groups: needs serviceAccountKey and domainToAdminEmail: groups come from the Directory API, so without them nobody could log in`,
      `${AT}.fetchTransitiveGroupMembership: needs serviceAccountKey and domainToAdminEmail: groups come from the Directory API`,
    ]);
  });

  it('needs an administrator for every hosted domain, unless * stands for them', () => {
    expect(parse({ ...GOOD, ...GROUPS, hostedDomains: ['acme.example', 'other.example'] }).problems).to.deep.equal([`${AT}.domainToAdminEmail: names no administrator for the hosted domain(s) other.example: add them, or *`]);
    expect(parse({ ...GOOD, ...GROUPS, domainToAdminEmail: { '*': 'a@acme.example' }, hostedDomains: ['acme.example', 'other.example'] }).problems).to.deep.equal([]);
  });

  it('refuses an empty hostedDomains (it would read as "any domain")', () => {
    expect(parse({ ...GOOD, hostedDomains: [] }).problems).to.deep.equal([`${AT}.hostedDomains: must not be empty: leave it out to let any Google account in`]);
  });
});
