/**
 * The rel="next" target of an RFC 8288 Link header, as GitHub and GitLab paginate their lists:
 * `<https://api.github.com/user/teams?page=2>; rel="next", <...>; rel="last"`.
 */
export function nextLink(header: string | null, base: string): string | undefined {
  if (header === null) return undefined;
  for (const part of header.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (match === null) continue;
    const rels = /\brel\s*=\s*"?([^";]+)"?/i.exec(match[2] ?? '')?.[1]?.toLowerCase().split(/\s+/) ?? [];
    if (!rels.includes('next')) continue;
    try {
      return new URL(match[1] ?? '', base).href;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
