#!/usr/bin/env bash
# C++ corpus: Boost's headers from Debian's libboost1.74-dev (installed when missing).
# The whole of Boost is some 14,000 headers; this takes a deterministic subset, the
# first 8 libraries in sorted order (accumulators, algorithm, align, archive, asio,
# assert, assign, atomic: about 1,000 files, asio's templates and Boost's macros
# included), plus Boost's top-level headers of the same names.
# Usage: cpp.sh DIR  ->  DIR/cpp/boost. Does nothing when DIR/cpp is already there.
set -euo pipefail
dir="${1:?usage: cpp.sh DIR}"
out="$dir/cpp"
[ -d "$out" ] && exit 0
boost=/usr/include/boost
if [ ! -f "$boost/version.hpp" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends libboost1.74-dev >/dev/null
fi
tmp="$dir/.cpp.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/boost"
libraries="$(cd "$boost" && find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | LC_ALL=C sort | head -n 8)"
for library in $libraries; do
    cp -R "$boost/$library" "$tmp/boost/"
    if [ -f "$boost/$library.hpp" ]; then
        cp "$boost/$library.hpp" "$tmp/boost/"
    fi
done
mv "$tmp" "$out"
