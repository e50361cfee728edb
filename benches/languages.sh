#!/usr/bin/env bash
# find_symbol on every language's corpus, beside `ctags -R` on the same tree: the numbers
# behind docs/performance.md's per-language speed table. Run from the repository root after
# `.ci/run` (or the scripts in .ci/corpora/) has fetched the corpora:
#
#   bash benches/languages.sh [LANGUAGE ...]
#
# For each corpus it runs `benches/symbols.rs` (ctags -R best of 3; the first lookup in a
# fresh process, best of 3; the first lookup in a fresh process that warmed its index
# while waiting 2 s for a model's reply, best of 3; a repeated lookup and a lookup right
# after an edit, in one process) and the criterion `find_symbol/real` group of `benches/tools.rs` (warm and
# cold, through the tool call the model makes). Names: a rare one, a middling one and a
# very common one in that corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
corpora="${METRON_CORPORA:-$HOME/.cache/metron-corpora}"

names_for() {
	case "$1" in
	go) echo "ParseDuration,NewReader,String" ;;
	python) echo "getpreferredencoding,Request,__init__" ;;
	javascript) echo "BufferGeometryLoader,Vector3,copy" ;;
	typescript) echo "QueryObserver,subscribe,pipe" ;;
	java) echo "ConcurrentSkipListMap,HashMap,toString" ;;
	c) echo "git_repository_open,git_oid,init" ;;
	cpp-apps) echo "TestEventListener,format,Run" ;;
	cpp) echo "accumulator_set,apply,value" ;;
	csharp) echo "PyBuffer,PyObject,ToString" ;;
	ruby) echo "Benchmark,parse,initialize" ;;
	php) echo "QueryBuilder,execute,__construct" ;;
	*) return 1 ;;
	esac
}

languages=("$@")
if [ ${#languages[@]} -eq 0 ]; then
	languages=(go python javascript typescript java c cpp-apps cpp csharp ruby php)
fi
for lang in "${languages[@]}"; do
	tree="$corpora/$lang"
	if [ "$lang" = go ] && [ ! -d "$tree" ]; then
		tree=$(ls -d /usr/share/go*/src 2>/dev/null | tail -1)
	fi
	if [ ! -d "$tree" ]; then
		echo "SKIP $lang: no corpus at $tree" >&2
		continue
	fi
	names=$(names_for "$lang")
	echo "== $lang ($(find "$tree" -type f | wc -l) files)"
	METRON_BENCH_TREE="$tree" METRON_BENCH_NAMES="$names" cargo bench -q --bench symbols 2>/dev/null
	METRON_BENCH_TREE="$tree" METRON_BENCH_SYMBOL="${names%%,*}" cargo bench -q --bench tools -- \
		--warm-up-time 1 --measurement-time 3 'find_symbol/real' 2>/dev/null |
		grep -E '^find_symbol|time:' || true
done
