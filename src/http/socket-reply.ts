/**
 * Answers written straight to a socket, for connections node:http has let go of (upgrades): a
 * status line and headers, and a JSON error as the app's error middleware would write it.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { SvcError } from '../errors.js';
import { STATUS } from './errors.js';

/** A status line and headers (a flat `[name, value, ...]` list), for a socket outside node:http's writer. */
export function statusBlock(status: number, message: string | undefined, headers: readonly string[]): string {
  const lines = [`HTTP/1.1 ${status} ${(message ?? STATUS_CODES[status] ?? '').replace(/[\r\n]/g, '')}`];
  for (let i = 0; i + 1 < headers.length; i += 2) lines.push(`${headers[i] as string}: ${(headers[i + 1] as string).replace(/[\r\n]/g, '')}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export function refuse(socket: Socket, err: SvcError): number {
  return answerOnSocket(socket, STATUS[err.code], { error: err.code, message: err.message });
}

/**
 * Closes after writing, whatever the client does with its side (the server allows half-open
 * sockets). `extra`: the reply's own headers (errorReply's Retry-After of a 429), as HTTP sends them.
 */
export function answerOnSocket(
  socket: Socket, status: number, json: { error: string; message: string }, requestId?: string, extra: Readonly<Record<string, string>> = {},
): number {
  const body = JSON.stringify(json);
  if (socket.writable) {
    const headers = ['content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body)), 'connection', 'close'];
    for (const [name, value] of Object.entries(extra)) headers.push(name, value);
    if (requestId !== undefined) headers.push('x-request-id', requestId);
    socket.end(statusBlock(status, undefined, headers) + body, () => socket.destroy());
  } else socket.destroy();
  return status;
}
