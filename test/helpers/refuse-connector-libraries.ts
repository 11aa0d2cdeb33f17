/**
 * Loaded with `--import` after tsx: from then on, resolving ldapts or @node-saml/node-saml throws.
 * The parse path (idp.config parsing, `svc-server validate`) must run without either.
 */
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier === 'ldapts' || specifier.startsWith('ldapts/') || specifier.startsWith('@node-saml/')) {
    throw new Error('refused: the parse path loads ' + specifier);
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
