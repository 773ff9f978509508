# Sourced (`. scripts/use-node.sh`): puts Node.js 24 first on PATH for this shell. The shell's own node is kept when
# it is 24 or newer; otherwise Node.js 24 LTS is installed into .tools/node from the npm registry and used.
_pje_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
_pje_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$_pje_major" -ge 24 ]; then
  printf '[node] using %s (%s)\n' "$(node --version)" "$(command -v node)"
else
  bash "$_pje_root/scripts/install-node.sh" || return 1 2>/dev/null || exit 1
  case ":$PATH:" in
    *":$_pje_root/.tools/node/bin:"*) ;;
    *) export PATH="$_pje_root/.tools/node/bin:$PATH" ;;
  esac
  printf '[node] using %s (%s)\n' "$(node --version)" "$(command -v node)"
fi
unset _pje_root _pje_major
