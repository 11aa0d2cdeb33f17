#!/usr/bin/env bash
# Start a PRIVATE OpenLDAP slapd (not the Debian system service) on 127.0.0.1.
# Usage: start-slapd.sh <dir> [ldap_port=3890] [ldaps_port=6360]
#   env: ADMIN_PASSWORD (default adminpw), ALICE_PASSWORD (alice123), BOB_PASSWORD (bob123)
#        USERS_LDIF: another users/groups LDIF (placeholders @ALICE_PW@ and @BOB_PW@ are filled in)
#        LDAPS=0 (or ldaps_port 0) to skip the ldaps listener / certificate generation.
#        ACCESSLOG=1: record every bind (reqDN, reqResult) in the accesslog database
#        cn=accesslog (read as cn=admin,cn=accesslog with ADMIN_PASSWORD), for tests that count
#        the binds reaching the directory.
#        TLS_FILES: a dir with cert.pem and key.pem to serve instead of a generated self-signed pair
#        (scripts/peers/make-test-ca.sh makes one signed by a test CA).
# Result: suffix dc=example,dc=org, rootdn cn=admin,dc=example,dc=org, mdb in <dir>/db,
#   ou=people (alice, bob), ou=groups (groupOfNames admins, devs), memberOf overlay on.
#   CA/server cert for ldaps: <dir>/tls/cert.pem (self-signed, SAN IP:127.0.0.1, DNS:localhost).
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-slapd.sh <dir> [ldap_port] [ldaps_port]}
PORT=${2:-3890}
SPORT=${3:-6360}
LDAPS=${LDAPS:-1}
# Port 0 is no listener: slapd would read ldaps://127.0.0.1:0/ as the default port 636, which a
# second slapd started that way finds taken, and exits 1 without a word.
[ "$SPORT" = 0 ] && LDAPS=0
ADMIN_PASSWORD=${ADMIN_PASSWORD:-adminpw}
ALICE_PASSWORD=${ALICE_PASSWORD:-alice123}
BOB_PASSWORD=${BOB_PASSWORD:-bob123}
for b in slapd slapadd slappasswd; do need "$b" slapd; done
for b in ldapadd ldapsearch; do need "$b" ldap-utils; done
[ "$LDAPS" = 1 ] && need openssl openssl
export PATH="$PATH:/usr/sbin"
refuse_taken_port "$PORT" $([ "$LDAPS" = 1 ] && echo "$SPORT")
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
T0=$(date +%s%N)
mkdir -p "$DIR/db" "$DIR/run"
PIDFILE="$DIR/run/slapd.pid"

TLSCONF=""
URLS="ldap://127.0.0.1:$PORT/"
if [ "$LDAPS" = 1 ]; then
  mkdir -p "$DIR/tls"
  [ -n "${TLS_FILES:-}" ] && cp "$TLS_FILES/cert.pem" "$TLS_FILES/key.pem" "$DIR/tls/"
  if [ ! -s "$DIR/tls/cert.pem" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=127.0.0.1" \
      -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
      -keyout "$DIR/tls/key.pem" -out "$DIR/tls/cert.pem" 2>/dev/null
  fi
  TLSCONF="TLSCertificateFile $DIR/tls/cert.pem
TLSCertificateKeyFile $DIR/tls/key.pem
TLSCACertificateFile $DIR/tls/cert.pem"
  URLS="$URLS ldaps://127.0.0.1:$SPORT/"
fi

ROOTPW=$(slappasswd -h '{SSHA}' -s "$ADMIN_PASSWORD")
ACCESSLOGDB=""
if [ "${ACCESSLOG:-0}" = 1 ]; then
  mkdir -p "$DIR/accesslog"
  ACCESSLOGDB="database mdb
maxsize 104857600
suffix cn=accesslog
rootdn cn=admin,cn=accesslog
rootpw $ROOTPW
directory $DIR/accesslog
index reqStart eq
access to * by * none
"
fi
cat > "$DIR/slapd.conf" <<CONF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
moduleload refint
$([ "${ACCESSLOG:-0}" = 1 ] && echo "moduleload accesslog")
pidfile  $PIDFILE
argsfile $DIR/run/slapd.args
loglevel none
$TLSCONF
$ACCESSLOGDB
database mdb
maxsize 104857600
suffix "dc=example,dc=org"
rootdn "cn=admin,dc=example,dc=org"
rootpw $ROOTPW
directory $DIR/db
index objectClass eq
index uid,mail,cn eq,sub
index member,memberOf eq
overlay memberof
memberof-group-oc groupOfNames
memberof-member-ad member
memberof-memberof-ad memberOf
memberof-refint TRUE
overlay refint
refint_attributes member
$([ "${ACCESSLOG:-0}" = 1 ] && printf 'overlay accesslog\nlogdb cn=accesslog\nlogops bind\n')
access to attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to *
  by * read
CONF

# Offline load of the base entries (fast, no server needed).
slapadd -q -f "$DIR/slapd.conf" -b "dc=example,dc=org" -l "$FIXTURES/ldap/base.ldif"

# Start slapd; it daemonizes and writes the pid file.
# slapd says nothing when it cannot start (a port taken, a bad config): name the command that shows why.
slapd -f "$DIR/slapd.conf" -h "$URLS" -s 0 \
  || { echo "slapd exited at start (a port of $URLS taken?); see why with: slapd -d 256 -f $DIR/slapd.conf -h '$URLS'" >&2; exit 1; }

for _ in $(seq 1 200); do
  ldapsearch -x -H "ldap://127.0.0.1:$PORT" -b "" -s base -LLL namingContexts >/dev/null 2>&1 && break
  sleep 0.05
done
ldapsearch -x -H "ldap://127.0.0.1:$PORT" -b "" -s base -LLL namingContexts >/dev/null 2>&1 \
  || { echo "slapd did not come up (try: slapd -d 256 -f $DIR/slapd.conf -h '$URLS')" >&2; exit 1; }

# Online load of users and groups so memberOf gets maintained by the overlay.
APW=$(slappasswd -h '{SSHA}' -s "$ALICE_PASSWORD")
BPW=$(slappasswd -h '{SSHA}' -s "$BOB_PASSWORD")
sed -e "s|@ALICE_PW@|$APW|" -e "s|@BOB_PW@|$BPW|" "${USERS_LDIF:-$FIXTURES/ldap/users.ldif}" > "$DIR/users.ldif"
ldapadd -x -H "ldap://127.0.0.1:$PORT" -D "cn=admin,dc=example,dc=org" -w "$ADMIN_PASSWORD" \
  -f "$DIR/users.ldif" >/dev/null

echo "slapd ready on ldap://127.0.0.1:$PORT$([ "$LDAPS" = 1 ] && echo " and ldaps://127.0.0.1:$SPORT (CA: $DIR/tls/cert.pem)") in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
