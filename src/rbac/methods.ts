/**
 * The actions of an `extensions` rights line: `*` (every method) or one HTTP method in lower
 * case, one line per method. A line for `get` also allows HEAD (a GET without its body). A
 * WebSocket handshake is a GET (RFC 6455; any other is refused before the rights are asked,
 * extensions/authorized-request.ts), so it is asked as one. A request with a method outside
 * this list (TRACE, PROPFIND…) is asked under its own lower-case name, which only a `*` line allows.
 */
export const EXTENSION_METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'] as const;

export type ExtensionMethod = (typeof EXTENSION_METHODS)[number];

/** What a `*` line writes: every method. */
export const EVERY_METHOD = '*';

/** The rights action a proxied request is asked under: its method in lower case. */
export function extensionAction(method: string | undefined): string {
  return (method ?? 'GET').toLowerCase();
}

export function isExtensionAction(action: string): boolean {
  return action === EVERY_METHOD || (EXTENSION_METHODS as readonly string[]).includes(action);
}

/** Why `action` cannot stand in an extensions line, or undefined when it can. */
export function extensionActionProblem(action: string): string | undefined {
  if (isExtensionAction(action)) return undefined;
  const lower = action.toLowerCase();
  const hint = (EXTENSION_METHODS as readonly string[]).includes(lower)
    ? `; methods are written in lower case: '${lower}'`
    : action === 'invoke'
      ? "; Argo CD's 'invoke' is '*' here"
      : /[{},*?[\]]/.test(action)
        ? '; write one line per method'
        : '';
  return `unknown method ${JSON.stringify(action)} for extensions (want * or one of ${EXTENSION_METHODS.join(', ')})${hint}`;
}
