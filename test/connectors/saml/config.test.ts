import { expect } from 'chai';
import { DEFAULT_NAME_ID_POLICY_FORMAT, parseSamlConfig, samlConfigSchema } from '../../../connectors/saml/config.js';
import { AT, parseWithProblems, TEST_CA, TEST_CA_BASE64 } from '../helpers.js';

const parse = (raw: unknown) => parseWithProblems(parseSamlConfig, raw);

const GOOD = { ssoURL: 'https://idp.example.com/sso', ca: TEST_CA, usernameAttr: 'name', emailAttr: 'email' };

describe('saml connector config', () => {
  it('takes a minimal config and fills in the defaults', () => {
    const { config, problems } = parse(GOOD);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({
      ...GOOD,
      insecureSkipSignatureValidation: false,
      filterGroups: false,
      nameIDPolicyFormat: DEFAULT_NAME_ID_POLICY_FORMAT,
    });
    expect(DEFAULT_NAME_ID_POLICY_FORMAT).to.equal('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
  });

  it("takes every key of Dex's SAML connector but redirectURI", () => {
    // Dex's saml Config (connector/saml/saml.go): ca and caData exclude each other, so two configs.
    const DEX_KEYS = ['ssoURL', 'ca', 'caData', 'insecureSkipSignatureValidation', 'entityIssuer', 'ssoIssuer', 'usernameAttr', 'emailAttr', 'groupsAttr', 'groupsDelim', 'allowedGroups', 'filterGroups', 'nameIDPolicyFormat', 'redirectURI'];
    expect(Object.keys(samlConfigSchema.shape).sort()).to.deep.equal(DEX_KEYS.filter((k) => k !== 'redirectURI').sort());
    const rest = {
      entityIssuer: 'https://svc.example.com/api/idp/callback',
      ssoIssuer: 'https://idp.example.com',
      usernameAttr: 'name',
      emailAttr: 'email',
      groupsAttr: 'groups',
      groupsDelim: ',',
      allowedGroups: ['admins', 'devs'],
      filterGroups: true,
      nameIDPolicyFormat: 'emailAddress',
      insecureSkipSignatureValidation: false,
    };
    const expected = { ...rest, ssoURL: 'http://127.0.0.1:8081/sso', nameIDPolicyFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' };
    const withCaData = parse({ ssoURL: 'http://127.0.0.1:8081/sso', caData: TEST_CA_BASE64, ...rest });
    expect(withCaData.problems).to.deep.equal([]);
    expect(withCaData.config).to.deep.equal({ ...expected, caData: TEST_CA });
    const withCa = parse({ ssoURL: 'http://127.0.0.1:8081/sso', ca: TEST_CA, ...rest, insecureSkipSignatureValidation: true, filterGroups: false });
    expect(withCa.problems).to.deep.equal([]);
    expect(withCa.config).to.deep.equal({ ...expected, ca: TEST_CA, insecureSkipSignatureValidation: true, filterGroups: false });
  });

  it('takes a full NameID format URN as it is', () => {
    const { config } = parse({ ...GOOD, nameIDPolicyFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient' });
    expect(config?.nameIDPolicyFormat).to.equal('urn:oasis:names:tc:SAML:2.0:nameid-format:transient');
  });

  it('names every bad key with its path, in one run', () => {
    const { config, problems } = parse({
      ssoURL: 'not a url',
      ca: '/etc/ssl/idp.pem',
      emailAttr: 42,
      groupsAttr: '',
      allowedGroups: 'admins',
      filterGroups: 'yes',
      nameIDPolicyFormat: 'nickname',
    });
    expect(config).to.equal(undefined);
    expect(problems).to.have.members([
      `${AT}.ssoURL: 'not a url' is not an http(s) URL`,
      `${AT}.ca: '/etc/ssl/idp.pem' must be PEM certificates (-----BEGIN CERTIFICATE-----) or a secret reference to them, never a file path`,
      `${AT}.usernameAttr: required`,
      `${AT}.emailAttr: 42 must be a string`,
      `${AT}.groupsAttr: must not be empty`,
      `${AT}.allowedGroups: 'admins' must be a list of strings`,
      `${AT}.filterGroups: 'yes' must be true or false`,
      `${AT}.nameIDPolicyFormat: 'nickname' is not a NameID format: one of emailAddress, unspecified, X509SubjectName, WindowsDomainQualifiedName, encrypted, entity, kerberos, persistent, transient, or its full URN`,
    ]);
  });

  it('refuses an ssoURL that is not http(s)', () => {
    expect(parse({ ...GOOD, ssoURL: 'javascript:alert(1)' }).problems).to.deep.equal([`${AT}.ssoURL: 'javascript:alert(1)' is not an http(s) URL`]);
  });

  it('refuses caData that is not base64 of PEM, and a truncated PEM', () => {
    const { ca: _ca, ...noCa } = GOOD;
    expect(parse({ ...noCa, caData: 'bm90IGEgY2VydA==' }).problems).to.deep.equal([`${AT}.caData: 'bm90IGEgY2VydA==' must be base64 of PEM certificates, or a secret reference to it`]);
    expect(parse({ ...GOOD, ca: TEST_CA.slice(0, 120) + TEST_CA.slice(-30) }).problems).to.deep.equal([
      `${AT}.ca: '-----BEGIN CERTIFICATE-----…' must be PEM certificates (-----BEGIN CERTIFICATE-----) or a secret reference to them, never a file path`,
    ]);
  });

  it('wants exactly one of ca and caData, unless signatures are not checked', () => {
    const { ca: _ca, ...noCa } = GOOD;
    expect(parse(noCa).problems).to.deep.equal([
      `${AT}: ca or caData is required (the certificates that sign the IdP responses), unless insecureSkipSignatureValidation: true`,
    ]);
    expect(parse({ ...GOOD, caData: TEST_CA_BASE64 }).problems).to.deep.equal([`${AT}.caData: cannot be combined with ca: set one of them`]);
    expect(parse({ ...noCa, insecureSkipSignatureValidation: true }).problems).to.deep.equal([]);
  });

  it('wants groupsAttr with groupsDelim', () => {
    expect(parse({ ...GOOD, groupsDelim: ',' }).problems).to.deep.equal([`${AT}.groupsDelim: needs groupsAttr: it splits that attribute`]);
  });

  it('names an unknown key', () => {
    expect(parse({ ...GOOD, ssoUrl: 'https://typo.example.com' }).problems).to.deep.equal([`${AT}.ssoUrl: unknown key; did you mean 'ssoURL'?`]);
  });

  it('refuses redirectURI: svc sets the callback URL itself', () => {
    const { config, problems } = parse({ ...GOOD, redirectURI: 'https://svc.example.com/api/idp/callback' });
    expect(config).to.equal(undefined);
    expect(problems).to.deep.equal([`${AT}.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream`]);
  });

  it('resolves the CA from a secret reference, and names a reference that does not resolve', () => {
    const { config, problems } = parse({ ...GOOD, ca: '$corp-idp:ca.crt' });
    expect(problems).to.deep.equal([]);
    expect(config?.ca).to.equal(TEST_CA);
    expect(parse({ ...GOOD, ca: '$foreign:key' }).problems).to.deep.equal([
      `${AT}.ca: references secret 'foreign', which lacks the label app.kubernetes.io/part-of: svc`,
    ]);
  });

  it('refuses a config that is not a map', () => {
    expect(parse('ssoURL: x').problems).to.deep.equal([`${AT}: must be a map`]);
  });
});
