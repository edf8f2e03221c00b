#!/usr/bin/env bash
# Builds a real GDB for --target=arc-elf32 from Debian's own `gdb` *source* package (bookworm: 13.1)
# and installs the single binary as $CACHE/arc-gdb/bin/arc-elf32-gdb. Debian's gdb-multiarch has
# no ARC support, and CI reaches only Debian's archive and npm, so the source comes from
# `apt-get source gdb`.
#
# The cache lives outside the repository (${CYCLELENS_CACHE:-$HOME/.cache/cyclelens}), so reruns on
# the same machine, from any checkout, skip the build. The system's apt configuration is never
# edited: a private sources list with a deb-src entry and private list/archive directories under the
# cache are handed to apt-get with -o options.
#
# Idempotent: a stamp records what was built; when it matches and the binary runs, the script exits
# at once. Prints how long the build took.
#   scripts/buildArcGdb.sh              # build if missing; prints the gdb path on the last line
#   ARC_GDB_FORCE=1 scripts/buildArcGdb.sh
set -euo pipefail

cache="${CYCLELENS_CACHE:-$HOME/.cache/cyclelens}"
work="$cache/arc-gdb"
gdb_bin="$work/bin/arc-elf32-gdb"
stamp="$work/stamp"
# Change this when the configure line changes: the stamp then no longer matches and we rebuild.
recipe="gdb-src-pkg;arc-elf32;no-python;no-guile;no-sim;no-tui;expat;v1"

# `set architecture` takes BFD's printable machine name (ARCv2); a target description names the
# same machine `arc:ARCv2`, which bfd_scan_arch also accepts.
works() {
  "$gdb_bin" --batch -nx -ex 'set architecture ARCv2' >/dev/null 2>&1
}

if [[ -z "${ARC_GDB_FORCE:-}" && -f "$stamp" && "$(cat "$stamp")" == "$recipe" ]] && works; then
  echo "arc-elf32-gdb already built"
  echo "$gdb_bin"
  exit 0
fi

start=$(date +%s)
mkdir -p "$work"

# --- build prerequisites (Debian packages only) ---------------------------------------------------
# GDB 13 needs GMP and MPFR (arbitrary-precision value printing), expat to parse the target
# description XML a gdbserver sends (without expat GDB ignores qXfer:features:read and the stub's
# PCT registers would never appear), and ncurses for its line editor. bison/flex regenerate the
# expression parsers if a Debian patch touched a grammar.
need=()
dpkg_has() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for pkg in dpkg-dev gcc g++ make xz-utils bison flex libexpat1-dev libgmp-dev libmpfr-dev libncurses-dev; do
  dpkg_has "$pkg" || need+=("$pkg")
done
if ((${#need[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "buildArcGdb: missing ${need[*]}; install them (apt-get install ${need[*]}) and rerun" >&2
    exit 1
  fi
  echo "--- installing ${need[*]}"
  # A fresh machine may have no package lists yet: update once and retry.
  if ! apt-get install -y --no-install-recommends "${need[@]}" >"$work/apt-install.log" 2>&1; then
    apt-get update >>"$work/apt-install.log" 2>&1 || true
    apt-get install -y --no-install-recommends "${need[@]}" >>"$work/apt-install.log" 2>&1 \
      || { tail -n 30 "$work/apt-install.log" >&2; exit 1; }
  fi
fi

# --- fetch the source package through a private apt configuration --------------------------------
apt_dir="$work/apt"
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

src_dir="$work/src"
if ! ls -d "$src_dir"/gdb-*/gdb/ >/dev/null 2>&1; then
  echo "--- fetching Debian's gdb source package"
  apt-get "${apt_opts[@]}" update >"$work/apt-update.log" 2>&1 || { tail -n 30 "$work/apt-update.log" >&2; exit 1; }
  rm -rf "$src_dir"
  mkdir -p "$src_dir"
  # Download only and unpack with dpkg-source ourselves (applies Debian's patches).
  (cd "$src_dir" && apt-get "${apt_opts[@]}" source --download-only gdb) >"$work/apt-source.log" 2>&1 \
    || { tail -n 30 "$work/apt-source.log" >&2; exit 1; }
  dsc="$(ls "$src_dir"/gdb_*.dsc | head -n1)"
  (cd "$src_dir" && dpkg-source --no-check -x "$dsc") >"$work/dpkg-source.log" 2>&1 \
    || { tail -n 30 "$work/dpkg-source.log" >&2; exit 1; }
fi
tree="$(ls -d "$src_dir"/gdb-*/ | head -n1)"
tree="${tree%/}"
[[ -x "$tree/configure" ]] || { echo "buildArcGdb: no configure script in $tree" >&2; exit 1; }
echo "--- source tree: $tree"

# --- configure and build GDB alone ----------------------------------------------------------------
# A build tree configured with the same recipe is reused (make is incremental), so a run that failed
# late resumes instead of starting over; ARC_GDB_FORCE starts from scratch.
build_dir="$work/build"
if [[ -n "${ARC_GDB_FORCE:-}" || ! -f "$build_dir/recipe" || "$(cat "$build_dir/recipe")" != "$recipe" ]]; then
  rm -rf "$build_dir"
fi
mkdir -p "$build_dir"
cd "$build_dir"
if [[ ! -f "$build_dir/recipe" ]]; then
"$tree/configure" \
  --target=arc-elf32 \
  --prefix="$work/install" \
  --disable-nls --disable-werror --disable-sim --disable-gdbserver \
  --disable-binutils --disable-ld --disable-gas --disable-gprof --disable-gprofng \
  --disable-tui --disable-source-highlight \
  --without-python --without-guile --without-babeltrace --without-libipt --without-xxhash \
  --without-debuginfod --without-zstd --without-lzma \
  --with-expat \
  MAKEINFO=true >configure.log 2>&1 || { tail -n 40 configure.log >&2; exit 1; }
echo "$recipe" >"$build_dir/recipe"
fi
jobs="$(nproc 2>/dev/null || echo 2)"
# nice: the machine is shared with other builds.
nice -n 10 make -j"$jobs" MAKEINFO=true all-gdb >make.log 2>&1 || { tail -n 60 make.log >&2; exit 1; }

mkdir -p "$work/bin"
# Stripped: the debug information would make the binary ~130 MB instead of ~15 MB.
install -s -m 0755 "$build_dir/gdb/gdb" "$gdb_bin.new"
mv -f "$gdb_bin.new" "$gdb_bin"

if ! works; then
  echo "buildArcGdb: build finished but $gdb_bin does not accept 'set architecture ARCv2'" >&2
  exit 1
fi
if ! "$gdb_bin" --configuration 2>/dev/null | grep -q -- '--with-expat'; then
  echo "buildArcGdb: $gdb_bin was built without expat; it would ignore the target description" >&2
  exit 1
fi
echo "$recipe" >"$stamp"
# The build tree is large and not needed once the binary is installed; the unpacked source stays
# so a forced rebuild does not download it again.
rm -rf "$build_dir"
end=$(date +%s)
echo "arc-elf32-gdb built in $((end - start)) s"
echo "$gdb_bin"
