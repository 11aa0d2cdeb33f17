/** A writable stream that keeps what is written to it, for a command's stdout or stderr in a test. */
import { Writable } from 'node:stream';

export function textSink(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}
