#!/usr/bin/env bash
# Installs every peer the tests start (Debian 12 packages), non-interactively and without
# the recommended extras. Idempotent and fast when all is there: dpkg-query decides, and
# apt-get runs only for what is missing. Needs root for that; without root it names the
# missing packages and exits 1.
# dpkg/apt never start the system services for us: the tests run private instances on
# other ports (scripts/peers/), and slapd is preseeded to build no system directory.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(redis-server slapd ldap-utils openssl simplesamlphp php-cli php-xml php-mbstring
          nginx wrk curl chromium
          # The image's test (test/e2e/image.test.ts): podman with Debian's runc builds and runs
          # the Dockerfile on a base mmdebstrap makes from Debian's packages (no registry needed).
          # Rootful, as the suite runs as root: rootless podman's uidmap, slirp4netns and
          # fuse-overlayfs are not needed.
          podman runc mmdebstrap
          # LemonLDAP::NG, the upstream OpenID provider of the oidc connector's and the external
          # OIDC provider's tests (and of
          # bench/sso-login.ts), served by plackup. With --no-install-recommends several Perl
          # modules it loads at start are not pulled in, and each one missing shows only as a
          # 500 "Initialization failed", so they are listed here.
          lemonldap-ng libplack-perl libgd-securityimage-perl libgd-perl libimage-magick-perl
          libstring-random-perl libemail-sender-perl libnet-ldap-perl libcrypt-openssl-bignum-perl
          libconvert-base32-perl libio-string-perl libipc-run-perl libmime-tools-perl
          libio-socket-timeout-perl libunicode-string-perl
          # LemonLDAP::NG over HTTPS (LLNG_TLS_DIR in start-lemonldap-ng.sh): a TLS-capable PSGI server.
          starman libio-socket-ssl-perl
          # Apache httpd with mod_auth_openidc: a relying party of the bundled identity provider
          # (scripts/peers/start-apache-oidc.sh).
          apache2 libapache2-mod-auth-openidc
          # Foreign clients of the bundled identity provider (test/e2e/idp-foreign-*.test.ts): oidc-agent
          # 4.2.6 (oidc-gen, oidc-token), a relying party on authlib 1.2 (/usr/bin/python3 with
          # requests), idwcc (iddawc 1.1.8): the versions of Debian 12.
          oidc-agent-cli python3-authlib python3-requests idwcc)
LOCK_WAIT_S=${LOCK_WAIT_S:-900}

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

missing=()
for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "test dependencies: all ${#PACKAGES[@]} packages installed" >&2
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "test dependencies missing: ${missing[*]}" >&2
  echo "install them as root: sudo $0   (or: apt-get install -y --no-install-recommends ${missing[*]})" >&2
  exit 1
fi

# Another apt-get/dpkg may be running (image build, a colleague): wait for it, don't fight it.
waited=0
while pgrep -x apt-get >/dev/null || pgrep -x dpkg >/dev/null || pgrep -x apt >/dev/null; do
  [ "$waited" -ge "$LOCK_WAIT_S" ] && { echo "apt/dpkg still busy after ${LOCK_WAIT_S}s; giving up" >&2; exit 1; }
  [ $((waited % 30)) -eq 0 ] && echo "waiting for another apt-get/dpkg to finish..." >&2
  sleep 2; waited=$((waited + 2))
done

# Re-check: the run we waited for may have installed them.
still=()
for p in "${missing[@]}"; do installed "$p" || still+=("$p"); done
[ "${#still[@]}" -eq 0 ] && { echo "test dependencies: installed meanwhile" >&2; exit 0; }

echo "installing: ${still[*]}" >&2
echo "slapd slapd/no_configuration boolean true" | debconf-set-selections
APT=(apt-get -q -o "DPkg::Lock::Timeout=$LOCK_WAIT_S")
"${APT[@]}" update
"${APT[@]}" install -y --no-install-recommends "${still[@]}"

for p in "${still[@]}"; do installed "$p" || { echo "$p did not install" >&2; exit 1; }; done
echo "test dependencies: installed ${still[*]}" >&2
