# Shared by the start-*.sh scripts (sourced, not run).
# A missing binary exits 127 with the Debian package to install: test/helpers/peers.ts turns
# that into a failed test with the same hint, never a skip.

# The repository's fixtures/ (LDIF, the trivial backend), shared with the tests.
FIXTURES=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../fixtures" && pwd)

# need <binary> <debian-package>
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  [ -x "/usr/sbin/$1" ] && return 0
  echo "$1 is missing: install the Debian package '$2' (apt-get install -y --no-install-recommends $2, or run scripts/install-test-deps.sh as root)" >&2
  exit 127
}

# refuse_taken_port <port>...: a stale instance would make a start "succeed" against it.
refuse_taken_port() {
  local p
  for p in "$@"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "127.0.0.1:$p is already in use (old instance still running?)" >&2
      exit 1
    fi
  done
}

# elapsed_ms <t0 from date +%s%N>
elapsed_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
