#!/usr/bin/env bash
# C++ corpus of mainstream code, beside Boost (cpp.sh), which is the stress case: a
# parser that does not preprocess meets Boost's macros everywhere. This one is what most
# C++ looks like: Google Test and Google Mock's whole source tree from Debian's
# googletest (1.12: .cc sources, headers, tests and samples, about 150 files), and the
# headers of spdlog (libspdlog-dev, 1.10) and of fmt (libfmt-dev, 9.1, which spdlog
# depends on), about 100 more: modern templates, inline `-inl.h` definitions.
# Usage: cpp-apps.sh DIR  ->  DIR/cpp-apps/{googletest,spdlog,fmt}. Does nothing when
# DIR/cpp-apps is already there.
set -euo pipefail
dir="${1:?usage: cpp-apps.sh DIR}"
out="$dir/cpp-apps"
[ -d "$out" ] && exit 0
if [ ! -d /usr/src/googletest/googletest ] || [ ! -f /usr/include/spdlog/spdlog.h ] \
    || [ ! -f /usr/include/fmt/format.h ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends googletest libspdlog-dev libfmt-dev >/dev/null
fi
tmp="$dir/.cpp-apps.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
cp -R /usr/src/googletest "$tmp/googletest"
cp -R /usr/include/spdlog "$tmp/spdlog"
cp -R /usr/include/fmt "$tmp/fmt"
mv "$tmp" "$out"
