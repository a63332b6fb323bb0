#!/usr/bin/env bash
# Build and run the cross-check of ports/go against Debian's Go peers
# (golang-github-cespare-xxhash-dev, golang-github-spaolacci-murmur3-dev) in a
# scratch module:  bash ports/go/crosscheck/run.sh SCRATCH_DIR [bench]
# (with "bench": time the port's hashes against the peers' instead)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=$(cd "$here/.." && pwd)
gocode=/usr/share/gocode/src/github.com
out=${1:?usage: run.sh SCRATCH_DIR [bench]}
mkdir -p "$out/m" "$out/murmur3"
cp "$gocode"/spaolacci/murmur3/*.go "$out/murmur3/"
rm -f "$out"/murmur3/*_test.go
printf 'module github.com/spaolacci/murmur3\n\ngo 1.19\n' >"$out/murmur3/go.mod"
cp "$here/main.go.txt" "$out/m/main.go"
cat >"$out/m/go.mod" <<MOD
module crosscheck

go 1.19

require (
	github.com/cespare/xxhash/v2 v2.1.1
	github.com/spaolacci/murmur3 v1.1.0
	shardhash v0.0.0
)

replace github.com/cespare/xxhash/v2 => $gocode/cespare/xxhash

replace github.com/spaolacci/murmur3 => $out/murmur3

replace shardhash => $port
MOD
cd "$out/m"
GOPROXY=off GOFLAGS=-mod=mod go run . "${2:-}"
