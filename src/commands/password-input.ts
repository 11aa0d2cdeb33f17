/**
 * The new password of `svc-server account set-password`, from a file or standard input, never
 * from an argument. One trailing line break is the file's or the pipe's, not the password's; any
 * other line break means the input is not one password, and is refused rather than guessed at.
 * On a terminal the password is asked twice, hidden (the CLI's prompt, src/cli/prompt.ts).
 */
import { createPrompter, type PromptInput } from '../cli/prompt.js';

/** At most this many bytes are read: a password is at most 72 (passwords.ts); more is not one. */
export const MAX_PASSWORD_INPUT_BYTES = 4096;

export type PasswordInput = PromptInput;

export type PasswordSource =
  | { readonly text: string; readonly from: string }
  | { readonly input: PasswordInput; readonly prompt: NodeJS.WritableStream };

export async function readNewPassword(source: PasswordSource): Promise<string> {
  if ('text' in source) return oneLine(source.text, source.from);
  const { input, prompt } = source;
  if (input.isTTY === true && typeof input.setRawMode === 'function') {
    const ask = createPrompter({ stdin: input, stderr: prompt });
    const first = await ask.password('New password: ', '--password-file');
    const again = await ask.password('Repeat it: ', '--password-file');
    if (first !== again) throw new Error('the two passwords typed differ; nothing was changed');
    return oneLine(first, 'the terminal');
  }
  return oneLine(await readAll(input), 'standard input');
}

function oneLine(text: string, from: string): string {
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new Error(`no password in ${from}`);
  if (/[\r\n]/.test(password)) throw new Error(`${from} holds more than one line; give the password alone, on one line`);
  return password;
}

async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_PASSWORD_INPUT_BYTES) throw new Error(`standard input holds more than ${MAX_PASSWORD_INPUT_BYTES} bytes; that is no password`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
