/**
 * Redis commands as client spans (semantic conventions: named after the command, `GET`,
 * db.system.name `redis`), for commands sent while a traced request is active: background work
 * (subscriptions, timers) makes no root span of its own. A command's arguments (keys, values:
 * session records, revocations) never become attributes, only its name.
 *
 * Our own wrapper rather than @opentelemetry/instrumentation-ioredis: that one patches module
 * loading (an import hook for ESM) and does not cover ioredis 6. A command is taken where it is
 * made, on the caller's turn: auto-pipelined commands go to a pipeline at once and are sent
 * together a tick later, when the active span is the first caller's, not each one's.
 */
import type { Cluster, Command, Redis } from 'ioredis';
import { context, trace } from '@opentelemetry/api';
import { failSpan, SpanKind, startSpan, type Attributes } from '../tracing/spans.js';

type Send = (command: Command, ...rest: unknown[]) => unknown;
interface Sending {
  sendCommand: Send;
}

/** Wraps `client` (made with tracing on) so that each command in a trace gets its span. */
export function traceRedisCommands<C extends Redis | Cluster>(client: C): C {
  const seen = new WeakSet<Command>();
  const spanFor = (command: Command): void => {
    if (seen.has(command)) return; // queued in a pipeline first, sent by it later
    seen.add(command);
    const active = context.active();
    if (trace.getSpan(active) === undefined) return;
    const { name, attributes } = namedCommand(command.name);
    const span = startSpan(name, attributes, SpanKind.CLIENT, active);
    if (span === undefined) return;
    command.promise.then(() => span.end(), (err: unknown) => {
      failSpan(span, err);
      span.end();
    });
  };
  wrapSend(client as unknown as Sending, spanFor);
  const pipeline = client.pipeline.bind(client);
  client.pipeline = ((...args: Parameters<typeof pipeline>) => {
    const made = pipeline(...args);
    wrapSend(made as unknown as Sending, spanFor);
    return made;
  }) as typeof client.pipeline;
  return client;
}

/** A command's span name and attributes, made once per command name (the SDK copies attributes it is given). */
const commandNames = new Map<string, { readonly name: string; readonly attributes: Attributes }>();

function namedCommand(command: string): { readonly name: string; readonly attributes: Attributes } {
  let named = commandNames.get(command);
  if (named === undefined) {
    const name = command.toUpperCase();
    named = { name, attributes: { 'db.system.name': 'redis', 'db.operation.name': name } };
    // Command names are ioredis's: a few hundred at most; bounded all the same.
    if (commandNames.size >= 1_000) commandNames.clear();
    commandNames.set(command, named);
  }
  return named;
}

function wrapSend(target: Sending, spanFor: (command: Command) => void): void {
  const send = target.sendCommand.bind(target);
  target.sendCommand = function tracedSendCommand(command: Command, ...rest: unknown[]) {
    spanFor(command);
    return send(command, ...rest);
  };
}
