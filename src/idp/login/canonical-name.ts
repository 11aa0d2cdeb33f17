/**
 * The one spelling of a username that the password form's failure window is keyed on. A
 * directory compares names loosely: LDAP's `uid` (caseIgnoreMatch, RFC 4518) ignores case,
 * leading and trailing spaces, runs of inner spaces and some invisible characters, so `Bob`,
 * ` bob` and `bob` are one account there. Keyed on the name as typed, each spelling got a
 * budget of its own: unlimited guessing against one entry.
 *
 * The fold is deliberately at least as loose as any directory's: NFKC, invisible characters
 * dropped, surrounding space trimmed and inner runs made one space, full case folding. Two
 * entries whose names differ only in case share a budget (they are refused together, never
 * granted more); the entry the directory resolved has a budget of its own besides
 * (password-guard.ts), for spellings this fold does not know.
 */

/** Characters a directory's string preparation maps to nothing (soft hyphen, zero-width, BOM, …). */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;
const SPACES = /\s+/gu;

export function canonicalUsername(typed: string): string {
  const folded = typed.normalize('NFKC').replace(INVISIBLE, '').replace(SPACES, ' ').trim();
  // Upper then lower: `ß` and its kin fold as full case folding does (`STRASSE` = `straße`).
  return folded.toUpperCase().toLowerCase();
}
