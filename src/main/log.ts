/** pino JSON logs; anything that could carry a credential is redacted wherever it appears. */
import { pino, type DestinationStream, type Logger } from 'pino';

export const REDACT_PATHS = [
  'password', '*.password', 'newPassword', '*.newPassword', 'currentPassword', '*.currentPassword',
  'token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'headers.cookie',
  'req.headers.authorization', 'req.headers.cookie', 'cookie', '*.cookie', 'clientSecret', '*.clientSecret',
];

export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  const level = options.level ?? logLevelFromEnv();
  return pino({ level, base: { service: 'svc' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, options.destination);
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** SVC_LOG_LEVEL, checked here: pino's own error ("default level:x must be included…") names no variable. */
function logLevelFromEnv(): string {
  const value = process.env['SVC_LOG_LEVEL'];
  if (value === undefined || value === '') return 'info';
  if (!LEVELS.includes(value)) throw new Error(`SVC_LOG_LEVEL: '${value.slice(0, 40)}' is not one of ${LEVELS.join(', ')}`);
  return value;
}
