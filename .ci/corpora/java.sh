#!/usr/bin/env bash
# Java corpus: a subset of the OpenJDK 17 class library sources, from Debian's
# openjdk-17-source (its src.zip): java.base's java/io, java/lang, java/net and
# java/util with their subpackages, about 830 files. The whole library is some 15,000
# files, too many for a test run; these four packages hold every construct ctags tags
# (records, enums with bodies, annotation types, nested and local classes, generics).
set -euo pipefail
dir="${1:?usage: java.sh DIR}"
out="$dir/java"
[ -d "$out" ] && exit 0
zip=/usr/lib/jvm/openjdk-17/lib/src.zip
if [ ! -f "$zip" ] || ! command -v unzip >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends openjdk-17-source unzip >/dev/null
fi
tmp="$dir/java.partial"
rm -rf "$tmp"
mkdir -p "$tmp"
unzip -q "$zip" 'java.base/java/io/*' 'java.base/java/lang/*' 'java.base/java/net/*' \
    'java.base/java/util/*' -d "$tmp"
mv "$tmp" "$out"
