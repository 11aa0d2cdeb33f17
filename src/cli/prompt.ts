/**
 * Asking for a missing value on a terminal. Passwords are read in raw mode and never echoed
 * (not even as `*`, which would leak the length). When stdin is not a terminal (a script, a
 * pipe, CI) nothing is read: the user gets an error naming the flag to pass instead, because a
 * command that silently waits on a pipe looks hung.
 *
 * Prompts go to stderr, so `svc account generate-token > token.txt` still prompts visibly.
 */
import { createInterface } from 'node:readline/promises';
import { CliError } from './errors.js';

export interface PromptInput extends NodeJS.ReadableStream {
  readonly isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

export interface PromptIo {
  readonly stdin: PromptInput;
  readonly stderr: NodeJS.WritableStream;
}

export interface Prompter {
  /** `label` is shown; `flag` is named in the error when there is no terminal. */
  password(label: string, flag: string): Promise<string>;
  text(label: string, flag: string): Promise<string>;
}

export function createPrompter(io: PromptIo): Prompter {
  return {
    password: (label, flag) => readHidden(requireTerminal(io, flag), io.stderr, label),
    text: async (label, flag) => {
      const stdin = requireTerminal(io, flag);
      const rl = createInterface({ input: stdin, output: io.stderr, terminal: true });
      // Ctrl-C in raw mode reaches readline, not the process: without this the question
      // would never settle and the process would end silently.
      const abort = new AbortController();
      rl.on('SIGINT', () => abort.abort());
      try {
        return (await rl.question(label, { signal: abort.signal })).trim();
      } catch (err: unknown) {
        if (abort.signal.aborted) throw new CliError('cancelled', { cause: err });
        throw err;
      } finally {
        rl.close();
      }
    },
  };
}

/** A value from its flag, else from a prompt, and never empty. */
export async function valueOrPrompt(
  value: string | undefined,
  ask: () => Promise<string>,
  what: string,
): Promise<string> {
  const result = value ?? (await ask());
  if (result === '') throw new CliError(`${what} must not be empty`);
  return result;
}

function requireTerminal(io: PromptIo, flag: string): PromptInput & { setRawMode(mode: boolean): unknown } {
  const { stdin } = io;
  if (stdin.isTTY !== true || typeof stdin.setRawMode !== 'function') {
    throw new CliError(`${flag} is required (stdin is not a terminal, so svc cannot prompt for it)`);
  }
  return stdin as PromptInput & { setRawMode(mode: boolean): unknown };
}

export type KeyStep =
  | { readonly kind: 'more'; readonly buffer: string }
  | { readonly kind: 'done'; readonly value: string }
  | { readonly kind: 'cancel' };

const ENTER = new Set(['\r', '\n', '\u0004']); // Ctrl-D ends the input like Enter
const CTRL_C = '\u0003';
const BACKSPACE = new Set(['\u007f', '\b']);
// Terminal escape sequences (arrow keys, Home, …) are matched on purpose here.
// eslint-disable-next-line no-control-regex
const ESCAPE_SEQUENCE = /^\u001b(?:\[[0-9;]*[A-Za-z~]|.)?/;

/** One chunk of raw keystrokes applied to what was typed so far (pure; unit-tested). */
export function applyKeys(buffer: string, chunk: string): KeyStep {
  let typed = buffer;
  let rest = chunk;
  while (rest !== '') {
    const escape = ESCAPE_SEQUENCE.exec(rest);
    if (escape !== null) {
      rest = rest.slice(escape[0].length); // arrows and the like: ignored
      continue;
    }
    const char = String.fromCodePoint(rest.codePointAt(0) ?? 0);
    rest = rest.slice(char.length);
    if (char === CTRL_C) return { kind: 'cancel' };
    if (ENTER.has(char)) return { kind: 'done', value: typed };
    if (BACKSPACE.has(char)) typed = [...typed].slice(0, -1).join('');
    else if (char >= ' ') typed += char;
  }
  return { kind: 'more', buffer: typed };
}

function readHidden(
  stdin: PromptInput & { setRawMode(mode: boolean): unknown },
  stderr: NodeJS.WritableStream,
  label: string,
): Promise<string> {
  stderr.write(label);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (): void => {
      stdin.removeListener('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stderr.write('\n');
    };
    const onData = (chunk: string | Buffer): void => {
      const step = applyKeys(typed, chunk.toString());
      if (step.kind === 'more') {
        typed = step.buffer;
        return;
      }
      finish();
      if (step.kind === 'done') resolve(step.value);
      else reject(new CliError('cancelled'));
    };
    stdin.on('data', onData);
  });
}

/** One line of a stream that is not a terminal (a script's pipe), without its line end; '' at its end. */
export async function readLine(input: NodeJS.ReadableStream): Promise<string> {
  const rl = createInterface({ input, terminal: false });
  try {
    for await (const line of rl) return line;
    return '';
  } finally {
    rl.close();
  }
}
