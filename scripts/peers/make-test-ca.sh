#!/usr/bin/env bash
# A throw-away test CA and one server certificate it signs, for TLS tests.
# Usage: make-test-ca.sh <dir> <subjectAltName>   e.g. make-test-ca.sh /tmp/x "IP:127.0.0.1"
# Writes <dir>/ca.pem (the CA certificate, to trust), <dir>/cert.pem and <dir>/key.pem (the
# server's). The CA key is removed: nothing else is ever signed with it. Valid 30 days.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: make-test-ca.sh <dir> <subjectAltName>}
SAN=${2:?usage: make-test-ca.sh <dir> <subjectAltName>}
need openssl openssl
mkdir -p "$DIR"
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=svc test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$DIR/ca-key.pem" -out "$DIR/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=svc test server" \
  -keyout "$DIR/key.pem" -out "$DIR/server.csr" 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$SAN" > "$DIR/server.ext"
openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca-key.pem" -CAcreateserial \
  -days 30 -extfile "$DIR/server.ext" -out "$DIR/cert.pem" 2>/dev/null
rm -f "$DIR/ca-key.pem" "$DIR/server.csr" "$DIR/server.ext" "$DIR/ca.srl"
