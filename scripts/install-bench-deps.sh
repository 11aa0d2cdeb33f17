#!/usr/bin/env bash
# Optional: the Debian 12 packages that only the benches need (CI never runs benches, so these are
# not in install-test-deps.sh). Today: LemonLDAP::NG served by plackup, the peer that
# bench/sso-login.ts compares svc's SSO login rate with (scripts/peers/start-lemonldap-ng.sh).
# With --no-install-recommends several Perl modules LemonLDAP::NG loads at start are not pulled in,
# and each one missing shows only as a 500 "Initialization failed", so they are listed here.
# Idempotent: apt-get runs only for what is missing. Needs root for that.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(lemonldap-ng libplack-perl libgd-securityimage-perl libgd-perl libimage-magick-perl
          libstring-random-perl libemail-sender-perl libnet-ldap-perl libcrypt-openssl-bignum-perl
          libconvert-base32-perl libio-string-perl libipc-run-perl libmime-tools-perl
          libio-socket-timeout-perl libunicode-string-perl openssl curl)

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

missing=()
for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "bench dependencies: all ${#PACKAGES[@]} packages installed" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "bench dependencies missing: ${missing[*]}" >&2
  echo "install them as root: sudo $0   (or: apt-get install -y --no-install-recommends ${missing[*]})" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
APT=(apt-get -q -o "DPkg::Lock::Timeout=${LOCK_WAIT_S:-900}")
"${APT[@]}" update
"${APT[@]}" install -y --no-install-recommends "${missing[@]}"
for p in "${missing[@]}"; do installed "$p" || { echo "$p did not install" >&2; exit 1; }; done
echo "bench dependencies: installed ${missing[*]}" >&2
