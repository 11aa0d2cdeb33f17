/** commands/password-input: the new password from a file, a pipe or a terminal, one line and never guessed at. */
import { expect } from 'chai';
import { PassThrough, Readable } from 'node:stream';
import { readNewPassword } from '../../src/commands/password-input.js';
import { textSink } from '../helpers/text-sink.js';

/** A stand-in terminal: raw mode recorded, keystrokes pushed by the test. */
function terminal(): PassThrough & { isTTY: true; setRawMode(mode: boolean): void; raw: boolean[] } {
  const stream = new PassThrough() as PassThrough & { isTTY: true; setRawMode(mode: boolean): void; raw: boolean[] };
  stream.isTTY = true;
  stream.raw = [];
  stream.setRawMode = (mode) => void stream.raw.push(mode);
  return stream;
}

async function typed(lines: readonly string[]): Promise<{ result: Promise<string>; prompt: () => string }> {
  const tty = terminal();
  const prompt = textSink();
  const result = readNewPassword({ input: tty, prompt: prompt.stream });
  for (const line of lines) {
    await new Promise((r) => setImmediate(r));
    tty.write(`${line}\r`);
  }
  return { result, prompt: prompt.text };
}

describe('commands/password-input', () => {
  it('strips the one trailing line break of a file or a pipe, and refuses more lines or nothing', async () => {
    expect(await readNewPassword({ text: 'pass word 1\n', from: 'f' })).to.equal('pass word 1');
    expect(await readNewPassword({ text: 'pass-word-1', from: 'f' })).to.equal('pass-word-1');
    expect(await readNewPassword({ input: Readable.from(['pass-', 'word-2\r\n']), prompt: textSink().stream })).to.equal('pass-word-2');
    for (const [text, message] of [
      ['a\nb\n', 'f holds more than one line; give the password alone, on one line'],
      ['pass\n\n', 'f holds more than one line; give the password alone, on one line'],
      ['\n', 'no password in f'],
    ] as const) {
      let error: unknown;
      await readNewPassword({ text, from: 'f' }).catch((err: unknown) => (error = err));
      expect((error as Error | undefined)?.message, JSON.stringify(text)).to.equal(message);
    }
  });

  it('refuses a pipe longer than any password', async () => {
    let error: unknown;
    await readNewPassword({ input: Readable.from(['x'.repeat(5000)]), prompt: textSink().stream }).catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal('standard input holds more than 4096 bytes; that is no password');
  });

  it('asks twice on a terminal, hidden, and refuses two different answers', async () => {
    const same = await typed(['term-pass-1', 'term-pass-1']);
    expect(await same.result).to.equal('term-pass-1');
    expect(same.prompt()).to.equal('New password: \nRepeat it: \n');
    const differ = await typed(['term-pass-1', 'term-pass-2']);
    let error: unknown;
    await differ.result.catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal('the two passwords typed differ; nothing was changed');
  });
});
