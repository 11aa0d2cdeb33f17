/**
 * LDAP search filters built from configuration and user input. A value is escaped exactly once
 * (RFC 4515 §3: `*`, `(`, `)`, `\` and NUL as `\XX`); Dex escapes the username twice, so names
 * holding any of those never match there. Non-ASCII stays as UTF-8: ldapts decodes each `\XX`
 * as one character, so escaping UTF-8 bytes would corrupt the value.
 */
const SPECIAL: Readonly<Record<string, string>> = { '*': '\\2a', '(': '\\28', ')': '\\29', '\\': '\\5c', '\0': '\\00' };

export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\0]/g, (ch) => SPECIAL[ch] ?? ch);
}

/** `(&<filter>(<attr>=<escaped value>))`, or just `(<attr>=<escaped value>)` without a filter. */
export function matchFilter(filter: string | undefined, attribute: string, value: string): string {
  const match = `(${attribute}=${escapeFilterValue(value)})`;
  return filter === undefined ? match : `(&${filter.trim()}${match})`;
}
