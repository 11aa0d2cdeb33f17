#!/usr/bin/env bash
# Start a PRIVATE SimpleSAMLphp (Debian package, 1.19) SAML 2.0 IdP with `php -S` on 127.0.0.1.
# Usage: start-simplesamlphp.sh <dir> [port=8443]
#   env: SP_ENTITY_ID (default http://127.0.0.1:8080/api/idp/callback): the one SP it trusts
#        SP_ACS_URL   (default http://127.0.0.1:8080/api/idp/callback): where it posts responses
#        SP_SLO_URL   (default http://127.0.0.1:8080/api/idp/logout)
#        ALICE_PASSWORD (alice123), BOB_PASSWORD (bob123), CAROL_PASSWORD (carol123),
#        SSP_ADMIN_PASSWORD (adminpw)
#        PHP_CLI_SERVER_WORKERS (default 4; php -S is single threaded otherwise)
#        AUTHSOURCES: another authsources.php template (same placeholders)
# Users (fixtures/simplesamlphp/config/authsources.php): alice (groups admins, devs),
#   bob (devs), carol (contractors), mallory:mallory123 (devs, role:admin, admin, Role:Admin);
#   attributes uid, mail, cn, displayName, groups.
# IdP entityID / metadata URL: http://127.0.0.1:<port>/saml2/idp/metadata.php
# SSO (Redirect/POST):          http://127.0.0.1:<port>/saml2/idp/SSOService.php
# Signing cert (PEM):           <dir>/cert/idp.crt
# Prints: the pid file path (last line of stdout). Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-simplesamlphp.sh <dir> [port]}
PORT=${2:-8443}
SSP=/usr/share/simplesamlphp
[ -d "$SSP/www" ] || { echo "simplesamlphp is missing: install the Debian packages 'simplesamlphp php-xml' (or run scripts/install-test-deps.sh as root)" >&2; exit 127; }
need php php-cli
need openssl openssl
need curl curl
SP_ENTITY_ID=${SP_ENTITY_ID:-http://127.0.0.1:8080/api/idp/callback}
SP_ACS_URL=${SP_ACS_URL:-http://127.0.0.1:8080/api/idp/callback}
SP_SLO_URL=${SP_SLO_URL:-http://127.0.0.1:8080/api/idp/logout}
ALICE_PASSWORD=${ALICE_PASSWORD:-alice123}
BOB_PASSWORD=${BOB_PASSWORD:-bob123}
CAROL_PASSWORD=${CAROL_PASSWORD:-carol123}
SSP_ADMIN_PASSWORD=${SSP_ADMIN_PASSWORD:-adminpw}
refuse_taken_port "$PORT"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
T0=$(date +%s%N)
BASEURL="http://127.0.0.1:$PORT/"
mkdir -p "$DIR"/{config,metadata,cert,log,data,tmp,sessions,run}
PIDFILE="$DIR/run/php.pid"

if [ ! -s "$DIR/cert/idp.crt" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=127.0.0.1 SimpleSAMLphp test IdP" \
    -keyout "$DIR/cert/idp.key" -out "$DIR/cert/idp.crt" 2>/dev/null
fi
SALT=$(openssl rand -hex 16)
sub() { # fill in the placeholders of a template
  sed -e "s|@DIR@|$DIR|g" -e "s|@BASEURL@|$BASEURL|g" -e "s|@SECRETSALT@|$SALT|g" \
      -e "s|@ADMINPW@|$SSP_ADMIN_PASSWORD|g" -e "s|@ALICE_PASSWORD@|$ALICE_PASSWORD|g" \
      -e "s|@BOB_PASSWORD@|$BOB_PASSWORD|g" -e "s|@CAROL_PASSWORD@|$CAROL_PASSWORD|g" \
      -e "s|@SP_ENTITY_ID@|$SP_ENTITY_ID|g" \
      -e "s|@SP_ACS_URL@|$SP_ACS_URL|g" -e "s|@SP_SLO_URL@|$SP_SLO_URL|g" "$1" > "$2"
}
F="$FIXTURES/simplesamlphp"
sub "$F/config/config.php"             "$DIR/config/config.php"
sub "${AUTHSOURCES:-$F/config/authsources.php}" "$DIR/config/authsources.php"
sub "$F/metadata/saml20-idp-hosted.php" "$DIR/metadata/saml20-idp-hosted.php"
sub "$F/metadata/saml20-sp-remote.php"  "$DIR/metadata/saml20-sp-remote.php"
for f in "$DIR"/config/*.php "$DIR"/metadata/*.php; do php -l "$f" >/dev/null; done

# php -S serves /usr/share/simplesamlphp/www as document root; PATH_INFO (module.php/...) works.
# SIMPLESAMLPHP_CONFIG_DIR points SimpleSAMLphp at the private config instead of /etc/simplesamlphp.
SIMPLESAMLPHP_CONFIG_DIR="$DIR/config" PHP_CLI_SERVER_WORKERS=${PHP_CLI_SERVER_WORKERS:-4} \
  setsid php -d display_errors=stderr -d log_errors=On -d error_log="$DIR/log/php-error.log" \
     -d session.save_path="$DIR/sessions" -d date.timezone=UTC \
     -S "127.0.0.1:$PORT" -t "$SSP/www" >"$DIR/log/php-server.log" 2>&1 < /dev/null &
echo $! > "$PIDFILE"

for _ in $(seq 1 200); do
  curl -fsS -o /dev/null "${BASEURL}saml2/idp/metadata.php" 2>/dev/null && break
  sleep 0.05
done
# Its error pages are HTTP 200 too, so check that real metadata came back.
if ! curl -fsS -o "$DIR/idp-metadata.xml" "${BASEURL}saml2/idp/metadata.php" \
   || ! grep -q 'IDPSSODescriptor' "$DIR/idp-metadata.xml"; then
  echo "SimpleSAMLphp did not come up; see $DIR/log/ (php-xml installed?)" >&2
  "$HERE/stop-peer.sh" "$PIDFILE" 2 || true; exit 1
fi
echo "simplesamlphp IdP ready on $BASEURL (signing cert $DIR/cert/idp.crt) in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
