#!/usr/bin/env bash
# Start a PRIVATE LemonLDAP::NG 2.16 portal (Debian package) as an OpenID Connect Provider on 127.0.0.1,
# served by plackup (no apache/nginx/FastCGI, no /etc or /var/lib changes: config, sessions, caches in <tmpdir>).
# Usage: start-lemonldap-ng.sh <tmpdir> [port=8444]
#   env: OIDC_CLIENT_ID (broker), OIDC_CLIENT_SECRET (broker-secret),
#        OIDC_REDIRECT_URI (http://127.0.0.1:8080/api/oidc/callback; space-separated list allowed)
#        LLNG_LDAP_URL  e.g. ldap://127.0.0.1:3890 -> authenticate against the start-slapd.sh directory
#                       (alice/alice123, bob/bob123; groups from ou=groups). Default: LLNG "Demo" users
#                       dwho/dwho, rtyler/rtyler, msmith/msmith.
#        LLNG_LDAP_ADMIN_PASSWORD (adminpw), LLNG_LOGLEVEL (warn)
#        LLNG_TLS_DIR   a dir with cert.pem and key.pem (e.g. from make-test-ca.sh, SAN IP:127.0.0.1):
#                       serve HTTPS with them (Starman, or HTTP::Server::PSGI when LLNG_SERVER says so);
#                       the issuer is then https://127.0.0.1:<port>/. Unset: plain http, as before.
# Issuer: http://127.0.0.1:<port>/   discovery: <issuer>.well-known/openid-configuration
# Client: confidential, client_secret_basic/post, RS256 id_token, JWT access tokens, consent skipped, PKCE optional.
# Claims: scope email -> email, profile -> name, preferred_username, extra scope "groups" -> groups (array).
# Prints: the pid file path (last line of stdout). Stop: stop-peer.sh <pidfile>
# Install: scripts/install-test-deps.sh (the oidc connector's and the external provider's tests start it).
#          HTTPS (LLNG_TLS_DIR) also needs the Debian packages starman and libio-socket-ssl-perl.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-lemonldap-ng.sh <tmpdir> [port]}
PORT=${2:-8444}
PSGI=/usr/share/lemonldap-ng/portal/htdocs/index.psgi
DEFCONF=/var/lib/lemonldap-ng/conf/lmConf-1.json   # shipped by liblemonldap-ng-common-perl
[ -f "$PSGI" ] && [ -f "$DEFCONF" ] || { echo "lemonldap-ng is missing: run scripts/install-test-deps.sh as root" >&2; exit 127; }
need plackup libplack-perl
need openssl openssl
need curl curl
OIDC_CLIENT_ID=${OIDC_CLIENT_ID:-broker}
OIDC_CLIENT_SECRET=${OIDC_CLIENT_SECRET:-broker-secret}
OIDC_REDIRECT_URI=${OIDC_REDIRECT_URI:-http://127.0.0.1:8080/api/oidc/callback}
TLS_DIR=${LLNG_TLS_DIR:-}
SCHEME=http; SERVER=${LLNG_SERVER:-HTTP::Server::PSGI}; TLS_ARGS=(); CURL_TLS=()
if [ -n "$TLS_DIR" ]; then
  [ -f "$TLS_DIR/cert.pem" ] && [ -f "$TLS_DIR/key.pem" ] || { echo "LLNG_TLS_DIR=$TLS_DIR has no cert.pem and key.pem (make them with make-test-ca.sh)" >&2; exit 1; }
  TLS_DIR=$(cd "$TLS_DIR" && pwd)
  SCHEME=https; SERVER=${LLNG_SERVER:-Starman}
  perl -MIO::Socket::SSL -e1 2>/dev/null || { echo "IO::Socket::SSL is missing: install the Debian package 'libio-socket-ssl-perl'" >&2; exit 127; }
  case "$SERVER" in
    Starman) perl -MStarman -e1 2>/dev/null || { echo "Starman is missing: install the Debian package 'starman'" >&2; exit 127; }
             TLS_ARGS=(--workers 4 --enable-ssl --ssl-cert "$TLS_DIR/cert.pem" --ssl-key "$TLS_DIR/key.pem") ;;
    HTTP::Server::PSGI) TLS_ARGS=(--ssl 1 --ssl-cert-file "$TLS_DIR/cert.pem" --ssl-key-file "$TLS_DIR/key.pem") ;;
    *) echo "LLNG_TLS_DIR: no TLS options known for LLNG_SERVER=$SERVER (Starman or HTTP::Server::PSGI)" >&2; exit 1 ;;
  esac
  if [ -f "$TLS_DIR/ca.pem" ]; then CURL_TLS=(--cacert "$TLS_DIR/ca.pem"); else CURL_TLS=(-k); fi
fi
refuse_taken_port "$PORT"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
T0=$(date +%s%N)
mkdir -p "$DIR"/{conf,cache,sessions/lock,psessions/lock,notifications,run,log}
PIDFILE="$DIR/run/portal.pid"
[ -s "$DIR/oidc.key" ] || { openssl genrsa -out "$DIR/oidc.key" 2048 2>/dev/null; openssl rsa -in "$DIR/oidc.key" -pubout -out "$DIR/oidc.pub" 2>/dev/null; }
sed -e "s|/var/lib/lemonldap-ng/conf|$DIR/conf|; s|/var/lib/lemonldap-ng/cache|$DIR/cache|; s|^logLevel .*|logLevel = ${LLNG_LOGLEVEL:-warn}|" \
  /etc/lemonldap-ng/lemonldap-ng.ini > "$DIR/lemonldap-ng.ini"
# Private copy of the packaged default config, every /var/lib path moved into $DIR, OIDC issuer on.
sed -e "s|/var/lib/lemonldap-ng/|$DIR/|g" "$DEFCONF" > "$DIR/conf/lmConf-1.json.orig"
DIR="$DIR" PORT="$PORT" SCHEME="$SCHEME" CID="$OIDC_CLIENT_ID" CSEC="$OIDC_CLIENT_SECRET" RURI="$OIDC_REDIRECT_URI" \
LDAPURL="${LLNG_LDAP_URL:-}" LDAPPW="${LLNG_LDAP_ADMIN_PASSWORD:-adminpw}" perl -MJSON::PP -e '
  local $/; open my $f, "<", "$ENV{DIR}/conf/lmConf-1.json.orig" or die; my $c = decode_json(<$f>);
  sub slurp { local $/; open my $h, "<", $_[0] or die $_[0]; <$h> }
  my $portal = "$ENV{SCHEME}://127.0.0.1:$ENV{PORT}/";
  $c->{portal} = $portal; $c->{domain} = "127.0.0.1"; $c->{securedCookie} = 0;
  $c->{cfgNum} = 1; $c->{registerDB} = "Null";            # no self-registration (needs SMTP)
  $c->{locationRules} = { "127.0.0.1" => { default => "accept" } };
  $c->{issuerDBOpenIDConnectActivation} = 1;
  $c->{oidcServicePrivateKeySig} = slurp("$ENV{DIR}/oidc.key");
  $c->{oidcServicePublicKeySig}  = slurp("$ENV{DIR}/oidc.pub");
  $c->{oidcServiceKeyIdSig} = "test-key-1";
  $c->{oidcRPMetaDataOptions} = { broker => {
    oidcRPMetaDataOptionsClientID => $ENV{CID}, oidcRPMetaDataOptionsClientSecret => $ENV{CSEC},
    oidcRPMetaDataOptionsRedirectUris => $ENV{RURI}, oidcRPMetaDataOptionsIDTokenSignAlg => "RS256",
    oidcRPMetaDataOptionsBypassConsent => 1, oidcRPMetaDataOptionsRequirePKCE => 0,
    oidcRPMetaDataOptionsPublic => 0, oidcRPMetaDataOptionsAccessTokenJWT => 1 } };
  $c->{oidcRPMetaDataExportedVars} = { broker => { email => "mail", name => "cn", preferred_username => "uid",
    groups => "groups;string;always" } };
  $c->{oidcRPMetaDataOptionsExtraClaims} = { broker => { groups => "groups" } };   # scope "groups" -> claim "groups"
  if ($ENV{LDAPURL}) {
    $c->{authentication} = "LDAP"; $c->{userDB} = "Same"; $c->{passwordDB} = "LDAP";
    $c->{ldapServer} = $ENV{LDAPURL}; $c->{ldapBase} = "ou=people,dc=example,dc=org";
    $c->{managerDn} = "cn=admin,dc=example,dc=org"; $c->{managerPassword} = $ENV{LDAPPW};
    $c->{AuthLDAPFilter} = "(&(uid=\$user)(objectClass=inetOrgPerson))";
    $c->{ldapGroupBase} = "ou=groups,dc=example,dc=org"; $c->{ldapGroupObjectClass} = "groupOfNames";
    $c->{ldapGroupAttributeName} = "member"; $c->{ldapGroupAttributeNameUser} = "dn";
    $c->{ldapGroupAttributeNameSearch} = "cn";
    $c->{ldapExportedVars} = { uid => "uid", cn => "cn", mail => "mail" };
  }
  open my $o, ">", "$ENV{DIR}/conf/lmConf-1.json" or die; print $o JSON::PP->new->pretty->canonical->encode($c);'
LLNG_DEFAULTCONFFILE="$DIR/lemonldap-ng.ini" setsid plackup -E deployment -s "$SERVER" \
  --host 127.0.0.1 --port "$PORT" ${TLS_ARGS[@]+"${TLS_ARGS[@]}"} "$PSGI" >"$DIR/log/portal.log" 2>&1 < /dev/null &
echo $! > "$PIDFILE"
DISCO="$SCHEME://127.0.0.1:$PORT/.well-known/openid-configuration"
for _ in $(seq 1 300); do curl -fs ${CURL_TLS[@]+"${CURL_TLS[@]}"} -o /dev/null "$DISCO" 2>/dev/null && break; sleep 0.05; done
curl -fs ${CURL_TLS[@]+"${CURL_TLS[@]}"} "$DISCO" | grep -q authorization_endpoint \
  || { echo "LemonLDAP::NG did not come up, see $DIR/log/portal.log (set LLNG_LOGLEVEL=debug)" >&2; exit 1; }
echo "lemonldap-ng OIDC provider ready on $SCHEME://127.0.0.1:$PORT/ (discovery $DISCO) in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
