#!/usr/bin/env bash
# Rebuilds the UI from web/ sources into a temporary directory and fails if
# the result differs from the committed web/dist (which the Go binary
# embeds). Run from anywhere; needs node and npm (installs web/node_modules
# with `npm ci` when it is missing or out of date with package-lock.json).
#
#   web/check-dist.sh          check
#   web/check-dist.sh --fix    rebuild web/dist in place instead
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
	npm ci --no-audit --no-fund --loglevel=error
fi

if [ "${1:-}" = "--fix" ]; then
	npm run --silent build
	exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
npm run --silent codegen >/dev/null
npm run --silent typecheck
npx vite build --logLevel warn --outDir "$tmp/dist" --emptyOutDir

if ! diff -r "$tmp/dist" dist >"$tmp/diff.txt"; then
	echo "web/dist is out of date with the web/ sources:" >&2
	head -n 40 "$tmp/diff.txt" >&2
	echo >&2
	echo "Rebuild it with: npm --prefix web run build   (or web/check-dist.sh --fix), then commit web/dist." >&2
	exit 1
fi
echo "web/dist is up to date."
