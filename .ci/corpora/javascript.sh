#!/usr/bin/env bash
# JavaScript corpus: three.js 0.170.0 (ES modules: classes, getters/setters, `this.x`
# fields, object literals) from src/ and examples/jsm/ (without examples/jsm/libs, which
# holds vendored, partly minified bundles), plus lodash 4.17.21 (CommonJS, one function
# per file) without its bundles (lodash.js, core.js) and minified files, which are one
# library built into one file and would count every function twice.
# Fetched with `npm pack` from the npm registry; writes only under DIR/javascript.
set -euo pipefail
dir="${1:?usage: javascript.sh DIR}"
out="$dir/javascript"
[ -d "$out" ] && exit 0
command -v npm >/dev/null || {
	echo "javascript.sh: needs npm" >&2
	exit 1
}
tmp="$dir/.javascript.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
(cd "$tmp" && npm pack --silent --cache "$tmp/npm-cache" three@0.170.0 lodash@4.17.21 >/dev/null)
mkdir -p "$tmp/three" "$tmp/lodash"
tar -xzf "$tmp/three-0.170.0.tgz" -C "$tmp/three" --strip-components=1
tar -xzf "$tmp/lodash-4.17.21.tgz" -C "$tmp/lodash" --strip-components=1
stage="$tmp/javascript"
mkdir -p "$stage/three/examples"
mv "$tmp/three/src" "$stage/three/src"
mv "$tmp/three/examples/jsm" "$stage/three/examples/jsm"
rm -rf "$stage/three/examples/jsm/libs"
mkdir -p "$stage/lodash"
(cd "$tmp/lodash" && find . -name '*.js' ! -name '*.min.js' ! -path './lodash.js' \
	! -path './core.js' -print0 | xargs -0 cp --parents -t "$stage/lodash")
mv "$stage" "$out"
rm -rf "$tmp"
