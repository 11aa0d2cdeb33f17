import { DirectoryFailure } from './connection.js';

/** The deadline of one login or refresh, and its caller's signal. */
export class Session {
  over = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;
  private readonly ended: Promise<never>;

  constructor(private readonly signal: AbortSignal, sessionMs: number) {
    let fail: (err: unknown) => void = () => undefined;
    this.ended = new Promise<never>((_, reject) => {
      fail = reject;
    });
    // Raced only; a rejection nobody awaits any more must not surface as unhandled.
    this.ended.catch(() => undefined);
    this.timer = setTimeout(() => {
      this.over = true;
      fail(new DirectoryFailure('timeout', `no answer within ${sessionMs} ms`));
    }, sessionMs);
    this.onAbort = () => {
      this.over = true;
      fail(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  race<T>(work: Promise<T>): Promise<T> {
    // Work that loses the race still ends (and closes its connection) on its own.
    work.catch(() => undefined);
    return Promise.race([work, this.ended]);
  }

  end(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
  }
}
