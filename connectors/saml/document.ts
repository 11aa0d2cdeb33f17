/**
 * Checks on the decoded SAMLResponse text before any signature is looked at, and the few
 * attributes of the outer <Response> svc compares. They refuse the shapes that signature-wrapping
 * attacks need: comments (a comment inside a signed NameID leaves the signature valid and cuts
 * the value short for a careless reader), processing instructions, a DOCTYPE (entities), CDATA, a
 * second <Response> (a signed one wrapped in a forged one) or a second <Assertion>. No IdP sends
 * any of these in a response.
 *
 * With those gone, every `<` in the text starts a tag (XML allows no raw `<` in text or attribute
 * values), so a tag scan is exact.
 */

/** A start tag: prefix, local name, attributes (quoted values may hold `>`). */
const START_TAG = /<(?:([A-Za-z_][\w.-]*):)?([A-Za-z_][\w.-]*)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const ATTRIBUTE = /([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const XML_DECLARATION = /^\uFEFF?<\?xml\s[^?]*\?>/;

export interface ResponseShape {
  /** Attributes of the root <Response>, entities decoded. */
  readonly response: ReadonlyMap<string, string>;
  /** How many <Assertion> elements there are (0 or 1; more is refused). */
  readonly assertions: number;
  /** The text of every <Issuer> (the Response's and the Assertion's). */
  readonly issuers: readonly string[];
}

/** The shape of `xml`, or the reason it is refused. */
export function responseShape(xml: string): ResponseShape | { readonly refused: string } {
  const body = xml.replace(XML_DECLARATION, '');
  if (body.includes('<!--')) return { refused: 'the response contains an XML comment' };
  if (body.includes('<?')) return { refused: 'the response contains a processing instruction' };
  if (body.includes('<!')) return { refused: 'the response contains a DOCTYPE, an entity declaration or CDATA' };

  const tags = [...body.matchAll(START_TAG)];
  const first = tags[0];
  if (first === undefined || body.slice(0, first.index).trim() !== '' || first[2] !== 'Response') {
    return { refused: 'the document is not a SAML <Response>' };
  }
  const responses = tags.filter((tag) => tag[2] === 'Response').length;
  if (responses !== 1) return { refused: `the response holds ${responses} <Response> elements (a wrapped response)` };
  if (tags.some((tag) => tag[2] === 'EncryptedAssertion')) return { refused: 'the response holds an encrypted assertion, which svc does not support' };
  const assertions = tags.filter((tag) => tag[2] === 'Assertion').length;
  if (assertions > 1) return { refused: `the response holds ${assertions} assertions; one is expected` };

  const issuers = [...body.matchAll(/<(?:[A-Za-z_][\w.-]*:)?Issuer(?:\s[^>]*)?>([^<]*)</g)].map((m) => decodeEntities((m[1] ?? '').trim()));
  return { response: attributesOf(first[3] ?? ''), assertions, issuers };
}

function attributesOf(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(ATTRIBUTE)) found.set(m[1] ?? '', decodeEntities(m[2] ?? m[3] ?? ''));
  return found;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);/g, (_all, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(parseInt(entity.slice(1), 10));
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[entity] ?? '';
  });
}
