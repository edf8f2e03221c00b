#!/usr/bin/env bash
# Builds GNU binutils (as, objdump, objcopy, ld) for --target=arc-elf32 from Debian's own binutils
# *source* package into ${CYCLELENS_CACHE:-$HOME/.cache/cyclelens}/arc-binutils/ (outside the repository, so reruns skip it). Debian packages no ARC binutils, and CI reaches only
# Debian's archive and npm, so the upstream source comes from `apt-get source binutils`.
#
# The system's apt configuration is never edited: a private sources list with a deb-src entry, a
# private package-list directory and a private archive cache live under the cache directory and are
# passed to apt-get with -o options.
#
# Idempotent: exits at once when the tools are already built. Prints how long the build took.
# Leaves <cache>/arc-binutils/install/bin/arc-elf32-{as,objdump,objcopy,ld,...} and
# <cache>/arc-binutils/gas-testsuite-arc (binutils' ARC assembler test programs).
#   scripts/buildArcBinutils.sh            # build if missing
#   ARC_BINUTILS_FORCE=1 scripts/...       # rebuild
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${ARC_BINUTILS_CACHE:-${CYCLELENS_CACHE:-$HOME/.cache/cyclelens}/arc-binutils}"
prefix="$cache/install"
tools=(as objdump objcopy ld)

built() {
  local t
  for t in "${tools[@]}"; do
    "$prefix/bin/arc-elf32-$t" --version >/dev/null 2>&1 || return 1
  done
}

if [[ -z "${ARC_BINUTILS_FORCE:-}" ]] && built; then
  echo "arc-elf32 binutils already built in $prefix/bin"
  exit 0
fi

start=$(date +%s)
mkdir -p "$cache"

# dpkg-source (dpkg-dev) unpacks the source package; a C compiler and make build it.
missing=()
command -v dpkg-source >/dev/null || missing+=(dpkg-dev)
command -v gcc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
command -v xz >/dev/null || missing+=(xz-utils)
if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "buildArcBinutils: missing ${missing[*]}; install them (apt-get install ${missing[*]}) and rerun" >&2
    exit 1
  fi
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# --- fetch the source package through a private apt configuration -------------------------------
apt_dir="$cache/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/sources.list.d"
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
cat >"$apt_dir/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main
EOF
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache::Archives=$apt_dir/archives"
  -o "Dir::Cache::pkgcache="
  -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=root"
)

src_dir="$cache/src"
if ! ls -d "$src_dir"/binutils-2.*/ >/dev/null 2>&1; then
  echo "--- fetching Debian's binutils source package"
  apt-get "${apt_opts[@]}" update
  rm -rf "$src_dir"
  mkdir -p "$src_dir"
  # --download-only, then dpkg-source ourselves: no dependency on apt's unpack step or a build-dep.
  (cd "$src_dir" && apt-get "${apt_opts[@]}" source --download-only binutils)
  dsc="$(ls "$src_dir"/binutils_*.dsc | head -n1)"
  (cd "$src_dir" && dpkg-source --no-check -x "$dsc")
fi
tree="$(ls -d "$src_dir"/binutils-2.*/ | head -n1)"
tree="${tree%/}"

# Debian's orig tarball carries the upstream tree; some versions nest it as a tarball of its own.
if [[ ! -x "$tree/configure" ]]; then
  inner="$(ls "$tree"/binutils-*.tar.* 2>/dev/null | head -n1 || true)"
  if [[ -z "$inner" ]]; then
    echo "buildArcBinutils: no configure script in $tree" >&2
    exit 1
  fi
  tar -C "$src_dir" -xf "$inner"
  tree="$(ls -d "$src_dir"/binutils-2.*/ | grep -v "^${tree}/\$" | head -n1)"
  tree="${tree%/}"
fi
echo "--- source tree: $tree"

# Debian's patches touch a few lexer/grammar sources (157_ar_scripts_with_tilde.patch: arlex.l, the
# `ar` MRI-script lexer), which makes make want flex/bison to regenerate the shipped .c files. None
# of those changes matter to as/objdump/objcopy/ld for ARC, so mark the shipped outputs current
# instead of installing flex and bison.
while IFS= read -r grammar; do
  base="${grammar%.*}"
  for generated in "$base.c" "$base.h"; do
    [[ -f "$generated" ]] && touch "$generated"
  done
done < <(find "$tree" \( -name '*.l' -o -name '*.y' \) -type f)

# --- configure and build only what the codec tests use ------------------------------------------
build_dir="$cache/build"
rm -rf "$build_dir"
mkdir -p "$build_dir"
cd "$build_dir"
"$tree/configure" \
  --target=arc-elf32 \
  --prefix="$prefix" \
  --disable-nls --disable-gdb --disable-gdbserver --disable-sim --disable-werror \
  --disable-gprof --disable-gprofng --disable-libdecnumber --disable-readline \
  --without-zstd --without-debuginfod \
  MAKEINFO=true >configure.log 2>&1 || { tail -n 40 configure.log >&2; exit 1; }
jobs="$(nproc 2>/dev/null || echo 2)"
make -j"$jobs" MAKEINFO=true all-binutils all-gas all-ld >make.log 2>&1 || { tail -n 60 make.log >&2; exit 1; }
make MAKEINFO=true install-binutils install-gas install-ld >install.log 2>&1 || { tail -n 40 install.log >&2; exit 1; }

if ! built; then
  echo "buildArcBinutils: build finished but the tools do not run" >&2
  exit 1
fi

# Keep the installed tools and gas's own ARC test programs (the codec tests walk them); drop the
# ~550 MB of sources, objects and package lists.
rm -rf "$cache/gas-testsuite-arc"
cp -r "$tree/gas/testsuite/gas/arc" "$cache/gas-testsuite-arc"
cd "$cache"
rm -rf "$build_dir" "$src_dir" "$apt_dir"
end=$(date +%s)
echo "arc-elf32 binutils built in $prefix/bin in $((end - start)) s"
