# Sourced by the install scripts: builds one pinned Go program with `go install` (Go module proxy only) into
# $tools/<dir>/bin/<name>, stamped with its version so that a later run is a no-op.
#   install_go_tool <label> <dir> <name> <module@version> <binary go install makes> <minutes hint>
install_go_tool() {
  local label="$1" dir="$2" name="$3" module="$4" built="$5" hint="$6"
  local version="${module##*@}" stamp="$dir/.version"
  if [ -x "$dir/bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    printf '[%s] %s present\n' "$label" "$version"
    return 0
  fi
  command -v go >/dev/null || { echo "go is required to build $module" >&2; return 1; }
  printf '[%s] building %s with go install (%s on a cold machine)...\n' "$label" "$module" "$hint"
  local start=$SECONDS build
  build="$(mktemp -d)"
  GOBIN="$build" GOFLAGS=-buildvcs=false go install "$module" || { rm -rf "$build"; return 1; }
  mkdir -p "$dir/bin"
  mv "$build/$built" "$dir/bin/$name"
  rm -rf "$build"
  echo "$version" > "$stamp"
  printf '[%s] %s ready in %ss\n' "$label" "$version" "$((SECONDS - start))"
}
