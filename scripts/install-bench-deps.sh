#!/usr/bin/env bash
# The benches' peers are the tests' peers (LemonLDAP::NG included, since the oidc connector's
# tests run against it): kept as a name for old instructions, it installs the same packages.
set -euo pipefail
exec "$(cd "$(dirname "$0")" && pwd)/install-test-deps.sh" "$@"
