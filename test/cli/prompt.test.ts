import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { CliError } from '../../src/cli/errors.js';
import { applyKeys, createPrompter, valueOrPrompt } from '../../src/cli/prompt.js';

describe('cli/prompt', () => {
  it('refuses to prompt when stdin is not a terminal and names the flag to pass', async () => {
    const prompter = createPrompter({ stdin: new PassThrough(), stderr: new PassThrough() });
    let caught: unknown;
    try {
      await prompter.password('Password: ', '--password');
    } catch (err: unknown) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(CliError);
    expect((caught as Error).message).to.equal('--password is required (stdin is not a terminal, so svc cannot prompt for it)');
  });

  it('reads a hidden password from a terminal without echoing it', async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
    const tty = Object.assign(stdin, { setRawMode: (mode: boolean) => stdin.rawModes.push(mode) });
    const stderr = new PassThrough();
    const shown: string[] = [];
    stderr.on('data', (c: Buffer) => shown.push(c.toString()));
    const answer = createPrompter({ stdin: tty, stderr }).password('Password: ', '--password');
    tty.write('s3cr');
    tty.write('x\u007fet\r');
    expect(await answer).to.equal('s3cret');
    expect(shown.join('')).to.equal('Password: \n');
    expect(stdin.rawModes).to.deep.equal([true, false]);
  });

  it('applies keystrokes: backspace, enter, Ctrl-C, and ignores escape sequences', () => {
    expect(applyKeys('', 'abc')).to.deep.equal({ kind: 'more', buffer: 'abc' });
    expect(applyKeys('abc', '\u007f\bd\r')).to.deep.equal({ kind: 'done', value: 'ad' });
    expect(applyKeys('ab', '\u001b[Dc\n')).to.deep.equal({ kind: 'done', value: 'abc' });
    expect(applyKeys('ab', '\u0003')).to.deep.equal({ kind: 'cancel' });
    expect(applyKeys('pä🔑', '\u007f\r')).to.deep.equal({ kind: 'done', value: 'pä' });
  });

  it('takes a flag value over a prompt and rejects an empty one', async () => {
    expect(await valueOrPrompt('given', () => Promise.reject(new Error('asked')), 'x')).to.equal('given');
    expect(await valueOrPrompt(undefined, () => Promise.resolve('typed'), 'x')).to.equal('typed');
    let caught: unknown;
    try {
      await valueOrPrompt(undefined, () => Promise.resolve(''), 'the password');
    } catch (err: unknown) {
      caught = err;
    }
    expect((caught as Error).message).to.equal('the password must not be empty');
  });
});
