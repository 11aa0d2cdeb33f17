/**
 * Loaded with `--import` after tsx: from then on, resolving ldapts, @node-saml/node-saml or
 * openid-client (the oidc connector's) throws.
 * The parse path (idp.config parsing, `svc-server validate`) must run without either.
 */
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier === 'ldapts' || specifier.startsWith('ldapts/') || specifier.startsWith('@node-saml/') || specifier === 'openid-client') {
    throw new Error('refused: the parse path loads ' + specifier);
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
