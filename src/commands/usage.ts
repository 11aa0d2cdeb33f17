/**
 * The synopsis of `svc-server`, printed by `svc-server --help` and shown in the README's
 * "Running it" (a test keeps the two the same, word for word).
 */
export const SERVER_SYNOPSIS = `svc-server [--config DIR] [--listen HOST:PORT] [--redis URL] [--tls-cert F --tls-key F] [--workers N]
           [--metrics-listen HOST:PORT]
svc-server --version
svc-server validate --config DIR
svc-server rbac can --config DIR SUBJECT RESOURCE ACTION OBJECT
svc-server admin initial-password --config DIR
svc-server login unlock [--redis URL] USERNAME
svc-server idp rotate-keys --config DIR`;
