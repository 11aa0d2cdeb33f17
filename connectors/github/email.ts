/**
 * The user's email, as Dex's GitHub connector picks it: the public email of /user, unless it is
 * empty or `preferredEmailDomain` is set; then from /user/emails the verified address in the
 * preferred domain, else the verified primary one. Only verified addresses count, on GitHub
 * Enterprise too (Dex counts every Enterprise address as verified; svc does not).
 */
export interface EmailEntry {
  readonly email: string;
  readonly verified: boolean;
  readonly primary: boolean;
}

/** Whether `domain` matches `pattern`, where a `*` label matches any one label (Dex's rule). */
export function inPreferredDomain(domain: string, pattern: string): boolean {
  const want = pattern.toLowerCase().split('.');
  const have = domain.toLowerCase().split('.');
  return want.length === have.length && want.every((label, i) => label === '*' || label === have[i]);
}

export function needsEmailList(publicEmail: string | undefined, preferredEmailDomain: string | undefined): boolean {
  return publicEmail === undefined || preferredEmailDomain !== undefined;
}

/** The address to use, or undefined when the user has no verified one to offer. */
export function pickEmail(entries: readonly EmailEntry[], preferredEmailDomain: string | undefined): string | undefined {
  const verified = entries.filter((e) => e.verified);
  if (preferredEmailDomain !== undefined) {
    const preferred = verified.find((e) => inPreferredDomain(e.email.slice(e.email.lastIndexOf('@') + 1), preferredEmailDomain));
    if (preferred !== undefined) return preferred.email;
  }
  return verified.find((e) => e.primary)?.email;
}

/** The list of /user/emails, entries of another shape left out. */
export function readEmails(items: readonly unknown[]): EmailEntry[] {
  return items.flatMap((item) => {
    const e = item as Partial<Record<keyof EmailEntry, unknown>>;
    return typeof e.email === 'string' && e.email !== '' ? [{ email: e.email, verified: e.verified === true, primary: e.primary === true }] : [];
  });
}
