#!/usr/bin/env bash
# TypeScript and TSX corpus: the src/ trees that rxjs 7.8.1 (TypeScript) and
# @tanstack/query-core and @tanstack/react-query 5.59.0 (TypeScript and TSX, tests
# included) ship. Only .ts and .tsx sources are kept; .d.ts declaration files are left
# out (there are none under these src/ trees), and so are the built bundles outside
# src/ (dist/, build/), which are compiled JavaScript.
# Fetched with `npm pack` from the npm registry; writes only under DIR/typescript.
set -euo pipefail
dir="${1:?usage: typescript.sh DIR}"
out="$dir/typescript"
[ -d "$out" ] && exit 0
command -v npm >/dev/null || {
	echo "typescript.sh: needs npm" >&2
	exit 1
}
tmp="$dir/.typescript.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
(cd "$tmp" && npm pack --silent --cache "$tmp/npm-cache" rxjs@7.8.1 @tanstack/query-core@5.59.0 \
	@tanstack/react-query@5.59.0 >/dev/null)
stage="$tmp/typescript"
for pkg in rxjs-7.8.1 tanstack-query-core-5.59.0 tanstack-react-query-5.59.0; do
	mkdir -p "$tmp/$pkg" "$stage/$pkg"
	tar -xzf "$tmp/$pkg.tgz" -C "$tmp/$pkg" --strip-components=1
	(cd "$tmp/$pkg" && find src \( -name '*.ts' -o -name '*.tsx' \) ! -name '*.d.ts' -print0 |
		xargs -0 cp --parents -t "$stage/$pkg")
done
mv "$stage" "$out"
rm -rf "$tmp"
