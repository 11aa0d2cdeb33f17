/**
 * Reading attributes of a directory entry, without the LDAP library (its `Entry` has this
 * shape: the DN plus one string or a list per attribute). Attribute names compare without case,
 * as LDAP's do; the pseudo-attribute `DN` is the entry's DN when no such attribute exists (Dex).
 */
export interface DirectoryEntry {
  readonly dn: string;
  readonly [attribute: string]: string | readonly string[] | Buffer | readonly Buffer[];
}

export function attributeValues(entry: DirectoryEntry, name: string): string[] {
  const lower = name.toLowerCase();
  for (const [key, value] of Object.entries(entry)) {
    if (key === 'dn' || key.toLowerCase() !== lower) continue;
    const values = Array.isArray(value) ? (value as readonly (string | Buffer)[]) : [value as string | Buffer];
    return values.map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : v));
  }
  return lower === 'dn' ? [entry.dn] : [];
}

/** The first value, or undefined when the entry lacks it (or it is empty). */
export function firstValue(entry: DirectoryEntry, name: string): string | undefined {
  const value = attributeValues(entry, name)[0];
  return value === undefined || value === '' ? undefined : value;
}

/** Attributes to ask the server for: named ones only (`DN` is not one), each once. */
export function requestedAttributes(names: readonly (string | undefined)[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    if (name === undefined || name === '' || name.toLowerCase() === 'dn') continue;
    if (!out.some((n) => n.toLowerCase() === name.toLowerCase())) out.push(name);
  }
  return out;
}
