/**
 * responseShape (connectors/saml/document.ts): the checks on the decoded SAMLResponse text before
 * any signature is looked at, on hand-written documents (the signed fixtures go through the whole
 * connector in saml.test.ts).
 */
import { expect } from 'chai';
import { responseShape } from '../../../connectors/saml/document.js';

const P = 'urn:oasis:names:tc:SAML:2.0:protocol';
const A = 'urn:oasis:names:tc:SAML:2.0:assertion';
const response = (inner: string, attributes = 'ID="_r1" InResponseTo="_q1"'): string =>
  `<samlp:Response xmlns:samlp="${P}" xmlns:saml="${A}" ${attributes}><saml:Issuer>https://idp.example</saml:Issuer>${inner}</samlp:Response>`;
const ASSERTION = '<saml:Assertion ID="_a1"><saml:Issuer>https://idp.example</saml:Issuer><saml:Subject><saml:NameID>alice</saml:NameID></saml:Subject></saml:Assertion>';

const refusal = (xml: string): string | undefined => {
  const shape = responseShape(xml);
  return 'refused' in shape ? shape.refused : undefined;
};

describe('saml document: the response\'s shape', () => {
  it('reads the root attributes (entities decoded, either quote), the assertion count and every Issuer', () => {
    const shape = responseShape(`<?xml version="1.0" encoding="UTF-8"?>\n${response(ASSERTION, `ID='_r1' InResponseTo = "_q&amp;1" Destination="https://svc/cb?a=1&lt;2&#x41;&#66;&quot;&apos;&gt;"`)}`);
    expect(shape).to.deep.equal({
      response: new Map([['xmlns:samlp', P], ['xmlns:saml', A], ['ID', '_r1'], ['InResponseTo', '_q&1'], ['Destination', 'https://svc/cb?a=1<2AB"\'>']]),
      assertions: 1,
      issuers: ['https://idp.example', 'https://idp.example'],
    });
  });

  it('takes a Response without prefix, without assertion, with a self-closing tag and a byte-order mark', () => {
    const shape = responseShape(`\uFEFF<?xml version="1.0"?><Response xmlns="${P}" ID="_r"><Issuer xmlns="${A}" Format="x"> https://idp &amp; co </Issuer><Status/></Response>`);
    expect(shape).to.deep.equal({ response: new Map([['xmlns', P], ['ID', '_r']]), assertions: 0, issuers: ['https://idp & co'] });
  });

  it('refuses a comment, a processing instruction, a DOCTYPE and CDATA anywhere', () => {
    expect(refusal(response(`<saml:Assertion><saml:NameID>alice<!---->@x</saml:NameID></saml:Assertion>`))).to.equal('the response contains an XML comment');
    expect(refusal(response('<?evil x?>'))).to.equal('the response contains a processing instruction');
    expect(refusal(`<?xml version="1.0"?><?xml-stylesheet href="x"?>${response('')}`)).to.equal('the response contains a processing instruction');
    expect(refusal(`<!DOCTYPE r [<!ENTITY e "x">]>${response('')}`)).to.equal('the response contains a DOCTYPE, an entity declaration or CDATA');
    expect(refusal(response('<saml:NameID><![CDATA[alice]]></saml:NameID>'))).to.equal('the response contains a DOCTYPE, an entity declaration or CDATA');
  });

  it('reads the attributes of a pretty-printed root, one per line', () => {
    const shape = responseShape(`<samlp:Response\n    xmlns:samlp="${P}"\n    ID="_r1"\t\tInResponseTo="_q1">${ASSERTION}</samlp:Response>`);
    expect('response' in shape && shape.response.get('InResponseTo')).to.equal('_q1');
  });

  it('removes the XML declaration only at the very start', () => {
    expect(refusal(response('<?xml version="1.0"?>'))).to.equal('the response contains a processing instruction');
  });

  it('refuses what is not a Response at its root', () => {
    for (const xml of ['', 'plain text', `text before ${response('')}`, ASSERTION, `<samlp:LogoutResponse xmlns:samlp="${P}"/>`, `<samlp:ResponseX xmlns:samlp="${P}"></samlp:ResponseX>`]) {
      expect(refusal(xml), xml).to.equal('the document is not a SAML <Response>');
    }
  });

  it('refuses a second Response, an encrypted assertion and a second assertion', () => {
    expect(refusal(response(`<samlp:Extensions>${response(ASSERTION)}</samlp:Extensions>`))).to.equal('the response holds 2 <Response> elements (a wrapped response)');
    expect(refusal(response('<saml:EncryptedAssertion>x</saml:EncryptedAssertion>'))).to.equal('the response holds an encrypted assertion, which svc does not support');
    expect(refusal(response(`${ASSERTION}${ASSERTION}`))).to.equal('the response holds 2 assertions; one is expected');
  });

  it('reads a quoted > inside an attribute as part of the value', () => {
    const shape = responseShape(response(ASSERTION, 'ID="_r>1" Note=\'a>b\''));
    expect('response' in shape && [...shape.response.entries()].slice(2)).to.deep.equal([['ID', '_r>1'], ['Note', 'a>b']]);
  });
});
