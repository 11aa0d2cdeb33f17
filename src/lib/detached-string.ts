/**
 * A copy of a string that shares no memory with the text it was cut from.
 *
 * V8 keeps a substring of 13 characters or more as a view into its parent (a "sliced string"),
 * so a value cut from a file's text keeps the whole text alive for as long as the value lives.
 * Values read from svc-secret end up in long-lived caches (the verified-token cache keeps the
 * key each token was checked under): every token write rewrote the file, and each cache entry
 * pinned the version of the file it was read from, about 6 kB per entry in an hour's soak,
 * growing with the file. Copying each value when it is read keeps one version of a file in
 * memory, however long its values are kept.
 *
 * JSON's round trip is the copy: it is lossless for every string (lone surrogates included,
 * which a UTF-8 round trip would replace) and builds the result from scratch.
 */
export function detachedString(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}
