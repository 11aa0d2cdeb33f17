/** Reads an application/x-www-form-urlencoded body with a size bound (the login form, SAML's POST). */
import type { IncomingMessage } from 'node:http';

/** A SAML response with its signature and certificates fits well within this. */
export const MAX_FORM_BYTES = 1024 * 1024;

/** Answered 413 and the connection closed (app.ts): the rest of the body is never read. */
export class FormTooLarge extends Error {}

export async function readForm(req: IncomingMessage, limit = MAX_FORM_BYTES): Promise<URLSearchParams> {
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded')) return new URLSearchParams();
  const declared = Number(req.headers['content-length']);
  if (declared > limit) throw new FormTooLarge(`form body of ${declared} bytes is over ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  // Not destroyed when left early: the 413 must still be written on its socket.
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new FormTooLarge(`form body over ${limit} bytes`);
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
