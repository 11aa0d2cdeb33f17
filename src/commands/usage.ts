/**
 * The synopsis of `svc-server`, printed by `svc-server --help` and shown in the README's
 * "Running it" (a test keeps the two the same, word for word).
 */
export const SERVER_SYNOPSIS = `svc-server [--config DIR] [--listen HOST:PORT] [REDIS] [--tls-cert F --tls-key F] [--workers N]
           [--metrics-listen HOST:PORT]
svc-server --kube [--kubeconfig FILE] [--namespace NS] [--listen HOST:PORT] [REDIS] ...
svc-server --version
svc-server validate --config DIR [REDIS]
svc-server validate --kube [--kubeconfig FILE] [--namespace NS]
svc-server rbac can --config DIR SUBJECT RESOURCE ACTION OBJECT
svc-server admin initial-password --config DIR
svc-server login unlock [REDIS] USERNAME
svc-server idp rotate-keys --config DIR      (or --kube [--kubeconfig FILE] [--namespace NS])
svc-server account set-password NAME [--password-file F] --config DIR      (or --kube ...)
svc-server account disable|enable|reset-second-factor NAME --config DIR   (or --kube ...)
svc-server account create NAME --capabilities login,apiKey --config DIR   (or --kube ...)`;
