#!/usr/bin/env bash
# Start a PRIVATE Apache httpd with mod_auth_openidc (Debian packages apache2 and
# libapache2-mod-auth-openidc; own ServerRoot, config, pid and logs in <dir>, never the system
# service) on 127.0.0.1 as an OpenID Connect relying party of svc's identity provider, with the
# stock module and a configuration as an administrator would write it:
#   /app/       any logged-in user (Require valid-user); its redirect URI is /app/redirect_uri
#   /admins/    only members of $OIDC_REQUIRE_GROUP (Require claim groups:<group>)
#   /loggedout.html   public, where Apache's logout comes back to
# Logout: /app/redirect_uri?logout=http://127.0.0.1:<port>/loggedout.html ends Apache's session
# and sends the browser to the provider's end_session_endpoint (discovered) with id_token_hint
# and that URI as post_logout_redirect_uri.
# Usage: start-apache-oidc.sh <dir> [port=8091]
#   env: OIDC_ISSUER (required: svc's <url>/api/idp), OIDC_CLIENT_ID (apache), OIDC_CLIENT_SECRET
#        (required), OIDC_SCOPE ("openid email profile groups"), OIDC_REQUIRE_GROUP (admins),
#        APACHE_LOGLEVEL (warn)
# mod_auth_openidc 2.4.12 refuses plain-http endpoints given one by one, but accepts a plain-http
# discovery URL and the endpoints it lists (a loopback test; use https elsewhere).
# Prints: the pid file path as the last line of stdout. Stop: stop-peer.sh <pidfile>
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=${1:?usage: start-apache-oidc.sh <dir> [port]}
PORT=${2:-8091}
need apache2 apache2
need curl curl
need openssl openssl
APACHE=$(command -v apache2 || echo /usr/sbin/apache2)
M=/usr/lib/apache2/modules
if [ ! -f "$M/mod_auth_openidc.so" ]; then
  echo "mod_auth_openidc is missing: install the Debian package 'libapache2-mod-auth-openidc' (apt-get install -y --no-install-recommends libapache2-mod-auth-openidc, or run scripts/install-test-deps.sh as root)" >&2
  exit 127
fi
OIDC_ISSUER=${OIDC_ISSUER:?OIDC_ISSUER: the provider, e.g. http://127.0.0.1:8080/api/idp}
OIDC_CLIENT_ID=${OIDC_CLIENT_ID:-apache}
OIDC_CLIENT_SECRET=${OIDC_CLIENT_SECRET:?OIDC_CLIENT_SECRET: the client secret registered at the provider}
OIDC_SCOPE=${OIDC_SCOPE:-openid email profile groups}
OIDC_REQUIRE_GROUP=${OIDC_REQUIRE_GROUP:-admins}
refuse_taken_port "$PORT"
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
# Children run as www-data when started as root: they must traverse $DIR (mutexes live in run/).
chmod 0755 "$DIR"
mkdir -p "$DIR"/{logs,run,htdocs/app,htdocs/admins}
PIDFILE="$DIR/run/apache2.pid"
T0=$(date +%s%N)
echo '<!doctype html><title>App</title><p>protected page of the app</p>' > "$DIR/htdocs/app/index.html"
echo '<!doctype html><title>Admins</title><p>page for admins only</p>' > "$DIR/htdocs/admins/index.html"
echo '<!doctype html><title>Logged out</title><p>logged out of the app</p>' > "$DIR/htdocs/loggedout.html"
chmod -R a+rX "$DIR/htdocs"
cat > "$DIR/apache2.conf" <<CONF
ServerRoot "$DIR"
ServerName 127.0.0.1
Listen 127.0.0.1:$PORT
PidFile $PIDFILE
DefaultRuntimeDir $DIR/run
Mutex file:$DIR/run default
ErrorLog $DIR/logs/error.log
LogLevel ${APACHE_LOGLEVEL:-warn}
$( [ "$(id -u)" = 0 ] && printf 'User www-data\nGroup www-data' )

LoadModule mpm_event_module $M/mod_mpm_event.so
LoadModule authz_core_module $M/mod_authz_core.so
LoadModule authz_user_module $M/mod_authz_user.so
LoadModule authn_core_module $M/mod_authn_core.so
LoadModule dir_module $M/mod_dir.so
LoadModule mime_module $M/mod_mime.so
LoadModule auth_openidc_module $M/mod_auth_openidc.so
TypesConfig /etc/mime.types
DirectoryIndex index.html
StartServers 1
ServerLimit 2
ThreadsPerChild 16
MaxRequestWorkers 32

DocumentRoot "$DIR/htdocs"
<Directory "$DIR/htdocs">
  Require all granted
</Directory>

OIDCProviderMetadataURL $OIDC_ISSUER/.well-known/openid-configuration
OIDCClientID $OIDC_CLIENT_ID
OIDCClientSecret $OIDC_CLIENT_SECRET
OIDCRedirectURI http://127.0.0.1:$PORT/app/redirect_uri
OIDCCryptoPassphrase $(openssl rand -hex 16)
OIDCScope "$OIDC_SCOPE"
OIDCPKCEMethod S256
OIDCSessionType server-cache
OIDCCacheType shm
OIDCRemoteUserClaim preferred_username

<Location /app/>
  AuthType openid-connect
  Require valid-user
</Location>
<Location /admins/>
  AuthType openid-connect
  Require claim groups:$OIDC_REQUIRE_GROUP
</Location>
CONF
"$APACHE" -t -f "$DIR/apache2.conf" 2>"$DIR/logs/configtest.log" || { cat "$DIR/logs/configtest.log" >&2; exit 1; }
"$APACHE" -f "$DIR/apache2.conf" -k start
for _ in $(seq 1 100); do [ -s "$PIDFILE" ] && curl -s -o /dev/null "http://127.0.0.1:$PORT/loggedout.html" && break; sleep 0.05; done
[ -s "$PIDFILE" ] || { echo "apache did not start, see $DIR/logs/error.log" >&2; exit 1; }
echo "apache+mod_auth_openidc ready on http://127.0.0.1:$PORT/app/ (client $OIDC_CLIENT_ID of $OIDC_ISSUER) in $(elapsed_ms "$T0") ms" >&2
echo "$PIDFILE"
