/** pino JSON logs; anything that could carry a credential is redacted wherever it appears. */
import { pino, type DestinationStream, type Logger } from 'pino';

export const REDACT_PATHS = [
  'password', '*.password', 'newPassword', '*.newPassword', 'currentPassword', '*.currentPassword',
  'token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'headers.cookie',
  'req.headers.authorization', 'req.headers.cookie', 'cookie', '*.cookie', 'clientSecret', '*.clientSecret',
];

export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  const level = options.level ?? process.env['SVC_LOG_LEVEL'] ?? 'info';
  return pino({ level, base: { service: 'svc' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, options.destination);
}
