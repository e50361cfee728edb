#!/usr/bin/env bash
# C corpus: libgit2 (include/, src/, deps/), as vendored in the libgit2-sys crate that
# metron itself depends on, so it is always in the cargo registry once the project has
# been built. Copied, not linked, so the tree stays put when the registry is cleaned.
# Usage: c.sh DIR  ->  DIR/c/libgit2. Does nothing when DIR/c is already there.
set -euo pipefail
dir="${1:?usage: c.sh DIR}"
out="$dir/c"
[ -d "$out" ] && exit 0
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
# The newest vendored libgit2 in the registry (sorted, last), whatever registry index.
src="$(find "$registry" -mindepth 3 -maxdepth 3 -type d -path '*/libgit2-sys-*/libgit2' 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$src" ]; then
    # Not fetched yet: fetch the project's dependencies (libgit2-sys among them).
    here="$(cd "$(dirname "$0")/../.." && pwd)"
    (cd "$here" && cargo fetch --quiet)
    src="$(find "$registry" -mindepth 3 -maxdepth 3 -type d -path '*/libgit2-sys-*/libgit2' | sort -V | tail -n 1)"
fi
[ -n "$src" ] || { echo "c.sh: no libgit2-sys in $registry" >&2; exit 1; }
tmp="$dir/.c.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/libgit2"
for part in include src deps; do
    cp -R "$src/$part" "$tmp/libgit2/"
done
mv "$tmp" "$out"
