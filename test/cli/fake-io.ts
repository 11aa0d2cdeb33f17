/** In-memory streams and a scripted fetch for running the CLI program in-process. */
import { PassThrough } from 'node:stream';
import type { FetchLike } from '../../src/cli/api-client.js';
import type { CliIo } from '../../src/cli/context.js';

export interface Captured {
  readonly io: CliIo;
  stdout(): string;
  stderr(): string;
}

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

export function fakeIo(env: Record<string, string | undefined>, fetch?: FetchLike): Captured {
  const out: string[] = [];
  const err: string[] = [];
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stdout.on('data', (c: Buffer) => out.push(c.toString()));
  stderr.on('data', (c: Buffer) => err.push(c.toString()));
  const stdin = new PassThrough();
  return {
    io: { stdout, stderr, stdin, env, ...(fetch !== undefined ? { fetch } : {}) },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}

/** A fetch that answers from `reply` and records every request. */
export function scriptedFetch(
  reply: (request: RecordedRequest) => { status: number; body?: unknown; text?: string },
): { fetch: FetchLike; requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const fetch: FetchLike = async (url, init) => {
    const headers = { ...(init.headers as Record<string, string>) };
    const body = typeof init.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined;
    const request: RecordedRequest = { method: init.method ?? 'GET', url, headers, ...(body !== undefined ? { body } : {}) };
    requests.push(request);
    const answer = reply(request);
    const text = answer.text ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
    return new Response(text === '' ? null : text, { status: answer.status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch, requests };
}
