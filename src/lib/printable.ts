/** Client text echoed in a message or log: printable ASCII only, and short. */
export function printable(text: string): string {
  const clean = text.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 80)}…` : clean;
}
