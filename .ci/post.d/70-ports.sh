#!/usr/bin/env bash
# The conformance kit and the reference ports of the routing protocol.
#
#   1. the kit (conformance/cases.jsonl) is exactly what tools/gen_conformance.py
#      generates from the package (which cross-checks it against the frozen
#      vectors and the pure-Python references), and the ports' Unicode tables
#      are what tools/gen_conformance_tables.py writes;
#   2. ports/go: gofmt-clean, go vet, go test (RouteIndexInt64 against RouteIndex
#      on every kit document), built, run against the kit;
#   3. ports/java: compiled warning-free (javac -Xlint:all -Werror), packed into
#      a jar, run against the kit, and its self-test (routeIndex(long) against
#      routeIndex(Object) on every kit document);
#   4. ports/js: run against the kit (Node >= 18), and its self-test (Number keys,
#      the integer fast path against the BigInt path on every kit document);
#   5. cross-checks with packaged peers: Guava's Hashing.consistentHash and
#      murmur3 against the Java port, cespare/xxhash and spaolacci/murmur3
#      against the Go port, xxhashjs (XXH32, XXH64) against the JavaScript port.
# Every port must pass every case (python -m shardhash.conformance).  In CI
# (SHARDHASH_CI set and not 0) a missing toolchain or peer is a failure;
# elsewhere a skip.  Run from the repository root; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
ROOT=$(pwd)
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
KIT="$ROOT/conformance/cases.jsonl"

work=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-ports.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GOCACHE="$work/gocache" GOPATH="$work/gopath" GOFLAGS=-mod=mod GOTOOLCHAIN=local GO111MODULE=on

passed=0
failed=0
failures=()
ok()   { echo "PASS: $1"; passed=$((passed + 1)); }
bad()  { echo "FAIL: $1" >&2; failed=$((failed + 1)); failures+=("$1"); }
skip() { echo "SKIP: $1"; }
in_ci() { [ -n "${SHARDHASH_CI:-}" ] && [ "${SHARDHASH_CI}" != 0 ]; }
missing() {  # missing WHAT: a failure in CI, a skip elsewhere
  if in_ci; then bad "$1 (required in CI: SHARDHASH_CI is set)"; else skip "$1"; fi
}
section() { printf '\n--- %s (%d s)\n' "$*" "$SECONDS"; }
have() { command -v "$1" >/dev/null 2>&1; }
kit() {  # kit NAME COMMAND...: run a port against the kit
  local name=$1; shift
  if "$PY" -m shardhash.conformance --cases "$KIT" -- "$@" >"$work/$name.log" 2>&1; then
    ok "$name: $(head -n 1 "$work/$name.log")"
  else
    sed 's/^/    /' "$work/$name.log" | head -n 40; bad "$name fails the conformance kit"
  fi
}

section "the kit and the tables"
if "$PY" tools/gen_conformance.py --check; then ok "conformance/cases.jsonl is what tools/gen_conformance.py makes"
else bad "conformance/cases.jsonl differs from what tools/gen_conformance.py makes"; fi
if "$PY" tools/gen_conformance_tables.py --check; then ok "the ports' Unicode tables are up to date"
else bad "the ports' Unicode tables differ from what tools/gen_conformance_tables.py writes"; fi

section "Go"
if have go; then
  echo "$(go version)"
  (
    cd ports/go || exit 1
    unformatted=$(gofmt -l .)
    if [ -n "$unformatted" ]; then echo "not gofmt-clean: $unformatted"; exit 1; fi
    go vet ./... && go test ./... && go build -o "$work/shardhash-conformance" ./cmd/shardhash-conformance
  ) >"$work/go-build.log" 2>&1 && ok "ports/go: gofmt, vet, test, build" || {
    sed 's/^/    /' "$work/go-build.log"; bad "ports/go does not build"; }
  [ -x "$work/shardhash-conformance" ] && kit go "$work/shardhash-conformance"
  if [ -d /usr/share/gocode/src/github.com/cespare/xxhash ] && \
     [ -d /usr/share/gocode/src/github.com/spaolacci/murmur3 ]; then
    if bash ports/go/crosscheck/run.sh "$work/crosscheck" >"$work/go-cross.log" 2>&1; then
      ok "ports/go agrees with cespare/xxhash and spaolacci/murmur3: $(tail -n 1 "$work/go-cross.log")"
    else
      sed 's/^/    /' "$work/go-cross.log" | tail -n 20; bad "ports/go disagrees with a packaged peer"
    fi
  else
    missing "Go peers (golang-github-cespare-xxhash-dev, golang-github-spaolacci-murmur3-dev)"
  fi
else
  missing "go (Debian package golang-go, .ci/apt.d/ports.txt)"
fi

section "Java"
if have javac && have java && have jar; then
  echo "$(javac -version 2>&1)"
  mkdir -p "$work/java"
  if javac -Xlint:all -Werror --release 17 -d "$work/java/classes" ports/java/src/io/shardhash/*.java \
       >"$work/java-build.log" 2>&1 && jar --create --file "$work/java/shardhash.jar" -C "$work/java/classes" . \
       >>"$work/java-build.log" 2>&1; then
    ok "ports/java: javac -Xlint:all -Werror, jar"
    kit java java -cp "$work/java/shardhash.jar" io.shardhash.Conformance
    if javac -Xlint:all -Werror -d "$work/java/test" -cp "$work/java/shardhash.jar" ports/java/test/SelfTest.java \
         >"$work/java-test.log" 2>&1 && \
       java -cp "$work/java/shardhash.jar:$work/java/test" SelfTest "$KIT" >>"$work/java-test.log" 2>&1; then
      ok "ports/java: $(tail -n 1 "$work/java-test.log")"
    else
      sed 's/^/    /' "$work/java-test.log" | tail -n 20; bad "ports/java: routeIndex(long) disagrees"
    fi
    guava=/usr/share/java/guava.jar
    if [ -f "$guava" ]; then
      if javac -d "$work/java/cross" -cp "$work/java/shardhash.jar:$guava" ports/java/crosscheck/GuavaCrossCheck.java \
           >"$work/java-cross.log" 2>&1 && \
         java -cp "$work/java/shardhash.jar:$guava:$work/java/cross" GuavaCrossCheck >>"$work/java-cross.log" 2>&1; then
        ok "ports/java agrees with Guava: $(tail -n 1 "$work/java-cross.log")"
      else
        sed 's/^/    /' "$work/java-cross.log" | tail -n 20; bad "ports/java disagrees with Guava"
      fi
    else
      missing "Guava (Debian package libguava-java)"
    fi
  else
    sed 's/^/    /' "$work/java-build.log"; bad "ports/java does not build"
  fi
else
  missing "javac/java/jar (Debian package openjdk-17-jdk-headless)"
fi

section "JavaScript"
if have node; then
  major=$(node -p 'process.versions.node.split(".")[0]')
  echo "node $(node --version)"
  if [ "$major" -ge 18 ]; then
    kit js node ports/js/conformance.mjs
    if node ports/js/test.mjs "$KIT" >"$work/js-test.log" 2>&1; then ok "ports/js: $(tail -n 1 "$work/js-test.log")"
    else sed 's/^/    /' "$work/js-test.log" | tail -n 20; bad "ports/js: Number keys or the fast path disagree"; fi
    if [ -d /usr/share/nodejs/xxhashjs ]; then
      if NODE_PATH=/usr/share/nodejs node --no-deprecation ports/js/crosscheck.mjs >"$work/js-cross.log" 2>&1; then
        ok "ports/js agrees with xxhashjs: $(tail -n 1 "$work/js-cross.log")"
      else
        sed 's/^/    /' "$work/js-cross.log" | tail -n 20; bad "ports/js disagrees with xxhashjs"
      fi
    else
      missing "xxhashjs (Debian package node-xxhashjs)"
    fi
  else
    bad "node $(node --version) is older than 18"
  fi
else
  missing "node (Debian package nodejs)"
fi

section "done"
echo "ports: $passed passed, $failed failed"
for f in "${failures[@]}"; do echo "  - $f"; done
[ "$failed" -eq 0 ]
