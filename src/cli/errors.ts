/**
 * The CLI's errors and the one function that turns any thrown value into the single line
 * `svc: <message>` and an exit code (DESIGN.md §8: 0 ok, 1 error, never a stack trace).
 * Messages never contain a token or a password: the API client never puts one in an error,
 * and unexpected errors are reduced to their first line.
 */

/** A mistake of the user or their environment, with a sentence that says what to do. */
export class CliError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CliError';
  }
}

/** The server answered with an error body `{error, message}` (DESIGN.md §4). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The server that answered, for the "log in again" hint. */
    readonly server?: string,
    /** The rest of the answer's body (a second step's challenge and factors). */
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ExitReport {
  readonly exitCode: number;
  /** The line for stderr (without `svc: ` and newline), or undefined when nothing is to be said. */
  readonly line?: string;
}

/** Commander's own errors carry these (duck-typed so this module needs no commander import). */
interface CommanderLike {
  readonly code: string;
  readonly exitCode: number;
  readonly message: string;
}

const QUIET_COMMANDER_CODES = new Set(['commander.helpDisplayed', 'commander.version', 'commander.help', 'commander.executeSubCommandAsync']);

export function reportError(err: unknown): ExitReport {
  if (isCommanderError(err)) {
    if (QUIET_COMMANDER_CODES.has(err.code)) return { exitCode: err.exitCode };
    return { exitCode: 1, line: oneLine(err.message.replace(/^error: /, '')) };
  }
  if (err instanceof ApiError) return { exitCode: 1, line: oneLine(apiErrorLine(err)) };
  if (err instanceof Error) return { exitCode: 1, line: oneLine(err.message) };
  return { exitCode: 1, line: oneLine(String(err)) };
}

function apiErrorLine(err: ApiError): string {
  if (err.code === 'unauthenticated') return `${err.message} (run 'svc login ${err.server ?? '<server>'}')`;
  return err.message;
}

function isCommanderError(err: unknown): err is CommanderLike {
  return (
    err instanceof Error &&
    typeof (err as Partial<CommanderLike>).code === 'string' &&
    (err as Partial<CommanderLike>).code?.startsWith('commander.') === true &&
    typeof (err as Partial<CommanderLike>).exitCode === 'number'
  );
}

function oneLine(text: string): string {
  const line = text.split('\n').map((s) => s.trim()).find((s) => s !== '');
  return line ?? 'unknown error';
}
