#!/bin/sh
# lavapipe-backports.sh [DIR] - Mesa's lavapipe from Debian's
# <codename>-backports (lavapipe 25: sparse binding, memory budget),
# unpacked privately into DIR (default build/lavapipe-backports) with
# apt-get download and dpkg -x: nothing is installed, no root needed.
# The backports source is derived from this machine's own apt source
# entries (the archive its <codename> suite comes from), so no host name
# is written anywhere.  With it, the package's dependencies that the
# backports suite also carries (libdrm2, the LLVM it was built with).
#
# Prints the two variables that select it, for eval:
#   VK_DRIVER_FILES=DIR/root/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
#   LD_LIBRARY_PATH=DIR/root/usr/lib/<triplet>
# Exit status 1 when no Debian source or no backports package is found.
set -eu
dir=${1:-build/lavapipe-backports}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# The machine's Debian archive: a deb822 stanza or a one-line entry whose
# suites include the release codename (not -security, not -updates).
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
uri=""
keyring=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -r "$f" ] || continue
  found=$(awk -v cn="$codename" '
    BEGIN { RS = ""; FS = "\n" }
    {
      u = ""; s = ""; k = ""; t = ""
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^URIs:/)      { u = $i; sub(/^URIs:[ \t]*/, "", u) }
        if ($i ~ /^Suites:/)    { s = " " $i " "; sub(/^ Suites:/, "", s) }
        if ($i ~ /^Signed-By:/) { k = $i; sub(/^Signed-By:[ \t]*/, "", k) }
        if ($i ~ /^Types:/)     { t = $i }
      }
      if (t ~ /deb( |$)/ && s ~ (" " cn " ")) { split(u, us, " "); print us[1] " " k; exit }
    }' "$f")
  if [ -n "$found" ]; then uri=${found%% *}; keyring=${found#* }; break; fi
done
if [ -z "$uri" ]; then
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    line=$(grep -E "^deb[[:space:]]" "$f" | grep -E "[[:space:]]$codename[[:space:]]" | head -n 1 || true)
    if [ -n "$line" ]; then
      uri=$(echo "$line" | sed -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' | awk '{print $1}')
      break
    fi
  done
fi
if [ -z "$uri" ] || [ -z "$codename" ]; then
  echo "lavapipe-backports: no Debian '$codename' source in /etc/apt/sources.list*" >&2
  exit 1
fi
[ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg
suite=$codename-backports

mkdir -p "$dir/apt/lists/partial" "$dir/apt/archives/partial" "$dir/debs" "$dir/root"
echo "deb [signed-by=$keyring] $uri $suite main" >"$dir/apt/sources.list"
: >"$dir/apt/status"
apt_private() {
  apt-get -q -o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$dir/apt/lists" -o Dir::State::Status="$dir/apt/status" \
    -o Dir::Cache="$dir/apt" -o Dir::Cache::Archives="$dir/apt/archives" -o Debug::NoLocking=1 "$@"
}
cache_private() {
  apt-cache -o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$dir/apt/lists" -o Dir::State::Status="$dir/apt/status" -o Dir::Cache="$dir/apt" "$@"
}
if [ ! -e "$dir/root/.done" ]; then
  apt_private update >&2
  # The driver, and those of its dependencies the backports suite carries.
  pkgs="mesa-vulkan-drivers"
  for dep in $(cache_private depends mesa-vulkan-drivers 2>/dev/null | awk '/Depends:/ {print $2}' | tr -d '<>' | sort -u); do
    if cache_private show "$dep" 2>/dev/null | grep -q "^Version:"; then pkgs="$pkgs $dep"; fi
  done
  (cd "$dir/debs" && apt_private download $pkgs >&2)
  for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done
  touch "$dir/root/.done"
fi
src=$(ls "$dir"/root/usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -n 1)
so=$(ls "$dir"/root/usr/lib/*/libvulkan_lvp.so 2>/dev/null | head -n 1)
[ -n "$src" ] && [ -n "$so" ] || { echo "lavapipe-backports: no lavapipe in the unpacked packages" >&2; exit 1; }
# The manifest names the installed path: point it at the private copy.
icd=$dir/lvp_icd.json
sed -E "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$so\"|" "$src" >"$icd"
lib=$(dirname "$so")
echo "VK_DRIVER_FILES=$icd"
echo "LD_LIBRARY_PATH=$lib"
