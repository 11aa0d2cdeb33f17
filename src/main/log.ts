/** pino JSON logs; anything that could carry a credential is redacted wherever it appears. */
import { pino, type DestinationStream, type Logger } from 'pino';
import { activeTraceIds } from '../tracing/spans.js';

export const REDACT_PATHS = [
  'password', '*.password', 'newPassword', '*.newPassword', 'currentPassword', '*.currentPassword',
  'token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'headers.cookie',
  'req.headers.authorization', 'req.headers.cookie', 'cookie', '*.cookie', 'clientSecret', '*.clientSecret',
];

export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  const level = options.level ?? logLevelFromEnv();
  return pino({ level, base: { service: 'svc' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, mixin: traceFields, mixinMergeStrategy: mergeTraceFields }, options.destination);
}

const NO_FIELDS = Object.freeze({});

/** The ECS trace.id and span.id of the active span, on each line written inside a traced request. */
function traceFields(): object {
  const ids = activeTraceIds();
  return ids === undefined ? NO_FIELDS : { 'trace.id': ids.traceId, 'span.id': ids.spanId };
}

/** pino's default merge writes into the mixin's object: the shared empty one is left alone. */
function mergeTraceFields(fields: object, mixin: object): object {
  return mixin === NO_FIELDS ? fields : Object.assign(mixin, fields);
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** SVC_LOG_LEVEL, checked here: pino's own error ("default level:x must be included…") names no variable. */
function logLevelFromEnv(): string {
  const value = process.env['SVC_LOG_LEVEL'];
  if (value === undefined || value === '') return 'info';
  if (!LEVELS.includes(value)) throw new Error(`SVC_LOG_LEVEL: '${value.slice(0, 40)}' is not one of ${LEVELS.join(', ')}`);
  return value;
}

/**
 * SVC_ACCESS_LOG=true writes one line per request at info (an access log, as a reverse proxy
 * keeps); unset or false keeps it at debug. Another value is warned about and counts as false.
 */
export function accessLogLevelFromEnv(env: Readonly<Record<string, string | undefined>>, log: Pick<Logger, 'warn'>): 'debug' | 'info' {
  const value = env['SVC_ACCESS_LOG'];
  if (value === undefined || value === '' || value === 'false') return 'debug';
  if (value === 'true') return 'info';
  log.warn({ variable: 'SVC_ACCESS_LOG', value: value.slice(0, 40) }, `SVC_ACCESS_LOG: '${value.slice(0, 40)}' is neither 'true' nor 'false'; the access line stays at debug`);
  return 'debug';
}
