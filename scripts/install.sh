#!/usr/bin/env bash
# Builds rankmig against the MPI and hwloc found first (mpicc on PATH, hwloc through
# pkg-config) and installs it into a prefix, without root, apt or sudo:
#
#   bin/rankmig                              the command (rankmig run, map, report, ...)
#   lib/librankmig.so.VERSION, .so.MAJOR, .so  the C interface (runtime only), SONAME librankmig.so.MAJOR
#   lib/librankmig.a                         the same, static
#   lib/librankmig_fortran.a                 the Fortran modules' code   } where the MPI has a
#   include/rankmig.mod, rankmig_f08.mod     the compiled Fortran modules } Fortran wrapper
#   include/rankmig.h, include/rankmig.f90   the C header, the Fortran module source
#   lib/pkgconfig/rankmig.pc (rankmig-fortran.pc)
#   lib/cmake/rankmig/rankmigConfig.cmake, rankmigConfigVersion.cmake
#   share/man/man1/rankmig*.1, share/{bash-completion,zsh,fish}/... completions
#   share/rankmig/install-manifest.txt       every file installed (what --uninstall removes)
#
# Usage: scripts/install.sh --prefix DIR [--destdir DIR] [--library-only] [--uninstall]
# --library-only leaves out the command, its man pages and completions: what programs
# build against, e.g. a second prefix for another MPI beside one with the command.
# DESTDIR (or --destdir) stages the install under DESTDIR/DIR while every path written into
# the installed files says DIR, as packagers expect. CARGO_TARGET_DIR is honoured (the
# default is target/install). docs/installing.md is the manual.
set -euo pipefail

usage() {
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

PREFIX=""
DESTDIR="${DESTDIR:-}"
UNINSTALL=0
LIBRARY_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift 2 ;;
    --prefix=*) PREFIX=${1#--prefix=}; shift ;;
    --destdir) [ $# -ge 2 ] || die "--destdir needs a directory"; DESTDIR=$2; shift 2 ;;
    --destdir=*) DESTDIR=${1#--destdir=}; shift ;;
    --uninstall) UNINSTALL=1; shift ;;
    --library-only) LIBRARY_ONLY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$PREFIX" ] || die "--prefix DIR is required (see --help)"
case "$PREFIX" in
  /*) ;;
  *) PREFIX="$(pwd)/$PREFIX" ;;
esac
PREFIX=${PREFIX%/}
STAGE="$DESTDIR$PREFIX"
MANIFEST_NAME=share/rankmig/install-manifest.txt

if [ "$UNINSTALL" = 1 ]; then
  manifest="$STAGE/$MANIFEST_NAME"
  [ -f "$manifest" ] || die "$manifest not found: nothing installed there by this script"
  while IFS= read -r file; do
    rm -f "$STAGE/$file"
  done < "$manifest"
  rm -f "$manifest"
  # The directories rankmig alone uses, when emptied.
  for dir in lib/cmake/rankmig share/rankmig; do
    rmdir "$STAGE/$dir" 2>/dev/null || true
  done
  echo "install.sh: removed rankmig from $STAGE" >&2
  exit 0
fi

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

# What the build needs, found as a user on a login node finds it (modules set PATH and
# PKG_CONFIG_PATH); nothing is installed here.
command -v cargo >/dev/null 2>&1 ||
  die "cargo not found on PATH: install Rust $(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml) or newer (https://rustup.rs, no root needed)"
MPICC=${MPICC:-mpicc}
command -v "$MPICC" >/dev/null 2>&1 ||
  die "$MPICC not found on PATH: load your MPI first (e.g. 'module load openmpi'), or set MPICC"
mpi_show=$("$MPICC" -show 2>/dev/null) || die "'$MPICC -show' failed: is $MPICC an MPI compiler wrapper?"
command -v pkg-config >/dev/null 2>&1 || die "pkg-config not found on PATH"
pkg-config --exists hwloc ||
  die "pkg-config finds no hwloc: load your hwloc module, or add the directory of hwloc.pc to PKG_CONFIG_PATH"
pkg-config --atleast-version=2.1 hwloc ||
  die "hwloc $(pkg-config --modversion hwloc) is too old: rankmig needs hwloc 2.1 or newer"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/install}"
RELEASE="$CARGO_TARGET_DIR/release"
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
MAJOR=${VERSION%%.*}
SONAME="librankmig.so.$MAJOR"
echo "install.sh: rankmig $VERSION with $(command -v "$MPICC") and hwloc $(pkg-config --modversion hwloc) into $STAGE" >&2

# mpi-sys does not notice another MPI on PATH: in a target directory last built with
# another mpicc, its build is removed first, so that mpi-sys, mpi and rankmig are built
# against this one.
built_with="$CARGO_TARGET_DIR/rankmig-install-mpicc"
if [ -f "$built_with" ] && [ "$(cat "$built_with")" != "$(command -v "$MPICC")" ]; then
  echo "install.sh: $CARGO_TARGET_DIR was built with $(cat "$built_with"): rebuilding the MPI crates" >&2
  cargo clean --quiet --release -p mpi-sys
fi
mkdir -p "$CARGO_TARGET_DIR"
command -v "$MPICC" > "$built_with"

mkdir -p "$STAGE/lib/pkgconfig" "$STAGE/lib/cmake/rankmig" "$STAGE/include" "$STAGE/share/rankmig"
# The command, with every feature.
if [ "$LIBRARY_ONLY" = 0 ]; then
  cargo build --release --bin rankmig
  mkdir -p "$STAGE/bin"
  install -m 755 "$RELEASE/rankmig" "$STAGE/bin/rankmig"
fi

# The library an application links: the runtime only (no clap, no plotters), with its
# SONAME, as a shared and a static library (the package's own crate type is rlib: no
# other build writes librankmig.so or librankmig.a, so builds of the command and of this
# library do not undo each other in one target directory).
static_libs_file="$RELEASE/rankmig-native-static-libs.txt"
lib_log=$(mktemp)
trap 'rm -f "$lib_log"' EXIT
cargo rustc --release --lib --crate-type cdylib --crate-type staticlib \
  --no-default-features --features mpi -- \
  -C "link-arg=-Wl,-soname,$SONAME" --print native-static-libs 2>&1 | tee "$lib_log" >&2
native=$(sed -n 's/.*native-static-libs: //p' "$lib_log" | head -n 1)
if [ -n "$native" ]; then
  echo "$native" > "$static_libs_file"
elif [ -f "$static_libs_file" ]; then
  native=$(cat "$static_libs_file")
fi
install -m 755 "$RELEASE/librankmig.so" "$STAGE/lib/librankmig.so.$VERSION"
ln -sf "librankmig.so.$VERSION" "$STAGE/lib/$SONAME"
ln -sf "$SONAME" "$STAGE/lib/librankmig.so"
install -m 644 "$RELEASE/librankmig.a" "$STAGE/lib/librankmig.a"
install -m 644 include/rankmig.h include/rankmig.f90 "$STAGE/include/"

# The MPI's own flags, in the order of its wrapper and read as build.rs reads them
# (scripts/mpi-flags.sh): written after -lrankmig into the .pc and the CMake target,
# so that rankmig's MPI_Send & co come first, each quoted for its file.
# shellcheck source=scripts/mpi-flags.sh
. "$ROOT/scripts/mpi-flags.sh"
mpi_flags "$mpi_show"
# The MPI library itself, which find_package(rankmig) compares with FindMPI's.
MPI_LIBRARY=$(mpi_library "${mpi_libs[@]}")
[ -n "$MPI_LIBRARY" ] ||
  echo "install.sh: no MPI library found from '$MPICC -show': find_package(rankmig) will not compare the MPI it finds with it" >&2

# Fortran: the modules compiled by the Fortran wrapper of the same MPI (beside its
# mpicc, or named by MPIFC), when it has one that works.
FORTRAN=0
fc_cflags=() fc_libs=()
FC=${MPIFC:-}
mpi_bin=$(dirname "$(command -v "$MPICC")")
if [ -z "$FC" ]; then
  for candidate in mpifort mpif90; do
    if [ -x "$mpi_bin/$candidate" ]; then FC=$mpi_bin/$candidate; break; fi
  done
fi
fortran_dir=$(mktemp -d)
if [ -n "$FC" ] && "$FC" -O2 -fPIC -c include/rankmig.f90 -J "$fortran_dir" -o "$fortran_dir/rankmig.o" 2>"$fortran_dir/log"; then
  install -m 644 "$fortran_dir/rankmig.mod" "$fortran_dir/rankmig_f08.mod" "$STAGE/include/"
  rm -f "$STAGE/lib/librankmig_fortran.a"
  ar rcs "$STAGE/lib/librankmig_fortran.a" "$fortran_dir/rankmig.o"
  FORTRAN=1
  # The Fortran wrapper's own flags (its `use mpi` modules, its Fortran MPI libraries).
  while IFS= read -r word; do
    case "$word" in
      -I*) fc_cflags+=("$word") ;;
      -pthread) fc_cflags+=("$word"); fc_libs+=("$word") ;;
      -L*|-l*|-Wl,*) fc_libs+=("$word") ;;
    esac
  done < <(mpi_show_words "$("$FC" -show 2>/dev/null)")
  echo "install.sh: Fortran modules compiled with $(command -v "$FC")" >&2
elif [ -n "$FC" ]; then
  echo "install.sh: $FC cannot compile include/rankmig.f90 (no Fortran MPI modules?); Fortran modules not installed:" >&2
  sed 's/^/  /' "$fortran_dir/log" | head -n 5 >&2
else
  echo "install.sh: no mpifort or mpif90 in $mpi_bin: Fortran modules not installed (the source is in include/rankmig.f90; MPIFC names a wrapper)" >&2
fi
rm -rf "$fortran_dir"

# The .pc files find the prefix from their own place (pkg-config's pcfiledir): the
# prefix can be moved, and a program built from it takes its run path there.
write_pc() {
  cat > "$STAGE/lib/pkgconfig/rankmig.pc" <<EOF
# rankmig $VERSION, built with $(command -v "$MPICC"): the C interface and the MPI it needs.
# -lrankmig comes before the MPI's libraries, so that rankmig counts the MPI calls.
prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
mpicc=$(pc_words "$(command -v "$MPICC")")
mpi_library=$(pc_words "$MPI_LIBRARY")

Name: rankmig
Description: Live migration and checkpoint/restart of MPI ranks (C interface)
Version: $VERSION
Cflags: -I\${includedir} $(pc_words "${mpi_cflags[@]}")
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lrankmig $(pc_words "${mpi_libs[@]}")
Libs.private: $native
EOF
  if [ "$FORTRAN" = 1 ]; then
    cat > "$STAGE/lib/pkgconfig/rankmig-fortran.pc" <<EOF
# The Fortran modules rankmig and rankmig_f08 (compiled by $(command -v "$FC")).
# -lrankmig comes before the MPI's Fortran libraries, so that rankmig counts mpi_send & co;
# rankmig.pc is required privately: pkg-config keeps the last of repeated flags, and
# rankmig's Libs after these would put -lrankmig behind them (its Cflags, and with
# --static its libraries, still come).
prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: rankmig-fortran
Description: Fortran modules of rankmig's C interface
Version: $VERSION
Requires.private: rankmig = $VERSION
Cflags: -I\${includedir} $(pc_words "${fc_cflags[@]}")
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lrankmig_fortran -lrankmig $(pc_words "${fc_libs[@]}")
EOF
  fi
}

# CMake: the library's directory is found from the package file's own place, so the
# package can be moved with its prefix.
write_cmake() {
  cat > "$STAGE/lib/cmake/rankmig/rankmigConfig.cmake" <<EOF
# rankmig $VERSION, built with $(command -v "$MPICC").
#
#   find_package(rankmig 1.0 REQUIRED)
#   target_link_libraries(app PRIVATE rankmig::rankmig)   # C and C++
#   target_link_libraries(app PRIVATE rankmig::fortran)   # Fortran: use rankmig / rankmig_f08
#
# rankmig::rankmig carries the MPI it was built with (compile and link flags of
# its mpicc) and puts librankmig ahead of every MPI library on the link line,
# whatever the order of target_link_libraries, so that rankmig counts the MPI
# calls. rankmig_FORTRAN_FOUND says whether rankmig::fortran exists.
#
# The MPI: rankmig_MPICC is the wrapper it was installed with, rankmig_MPI_LIBRARY
# that MPI's library. find_package(rankmig) fails when the MPI that CMake's FindMPI
# finds (the project's find_package(MPI), or one made here when the project made none)
# links another library: a program would be built against one MPI and rankmig against
# another.
get_filename_component(_rankmig_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(rankmig_VERSION "$VERSION")
set(rankmig_MPICC "$(cmake_list "$(command -v "$MPICC")")")
set(rankmig_MPI_LIBRARY "$(cmake_list "$MPI_LIBRARY")")

if(rankmig_MPI_LIBRARY)
  if(NOT MPI_C_FOUND AND NOT MPI_CXX_FOUND AND NOT MPI_Fortran_FOUND)
    find_package(MPI QUIET)
  endif()
  unset(_rankmig_found_library)
  foreach(_rankmig_lang IN ITEMS C CXX Fortran)
    if(MPI_\${_rankmig_lang}_FOUND AND NOT _rankmig_found_library)
      foreach(_rankmig_lib IN LISTS MPI_\${_rankmig_lang}_LIBRARIES)
        get_filename_component(_rankmig_name "\${_rankmig_lib}" NAME)
        if(_rankmig_name MATCHES "^libmpi\\\\.(so|a)" AND NOT _rankmig_found_library)
          get_filename_component(_rankmig_found_library "\${_rankmig_lib}" REALPATH)
          set(_rankmig_found_wrapper "\${MPI_\${_rankmig_lang}_COMPILER}")
        endif()
      endforeach()
    endif()
  endforeach()
  if(_rankmig_found_library AND NOT _rankmig_found_library STREQUAL rankmig_MPI_LIBRARY)
    set(rankmig_FOUND FALSE)
    set(rankmig_NOT_FOUND_MESSAGE "rankmig in \${_rankmig_prefix} was installed against the MPI of \${rankmig_MPICC} (\${rankmig_MPI_LIBRARY}), but CMake's FindMPI found another: \${_rankmig_found_wrapper} (\${_rankmig_found_library}). Load the MPI rankmig was installed with (or point FindMPI at its wrapper: -DMPI_C_COMPILER=\${rankmig_MPICC}), or use a rankmig installed against this MPI.")
    unset(_rankmig_prefix)
    return()
  endif()
endif()

set(rankmig_INCLUDE_DIRS "\${_rankmig_prefix}/include")
set(rankmig_FORTRAN_FOUND $( [ "$FORTRAN" = 1 ] && echo TRUE || echo FALSE ))

if(NOT TARGET rankmig::rankmig)
  add_library(rankmig::rankmig SHARED IMPORTED)
  set_target_properties(rankmig::rankmig PROPERTIES
    IMPORTED_LOCATION "\${_rankmig_prefix}/lib/librankmig.so.$VERSION"
    IMPORTED_SONAME "$SONAME"
    INTERFACE_INCLUDE_DIRECTORIES "\${_rankmig_prefix}/include"
    INTERFACE_COMPILE_OPTIONS "\$<\$<COMPILE_LANGUAGE:C,CXX>:$(cmake_list "${mpi_cflags[@]}")>"
    # Link options come before the libraries on the link line: librankmig first.
    INTERFACE_LINK_OPTIONS "LINKER:--no-as-needed;\${_rankmig_prefix}/lib/librankmig.so.$VERSION"
    INTERFACE_LINK_LIBRARIES "$(cmake_list "${mpi_libs[@]}")")
endif()

if(rankmig_FORTRAN_FOUND AND NOT TARGET rankmig::fortran)
  add_library(rankmig::fortran STATIC IMPORTED)
  set_target_properties(rankmig::fortran PROPERTIES
    IMPORTED_LOCATION "\${_rankmig_prefix}/lib/librankmig_fortran.a"
    INTERFACE_INCLUDE_DIRECTORIES "\${_rankmig_prefix}/include"
    INTERFACE_COMPILE_OPTIONS "\$<\$<COMPILE_LANGUAGE:Fortran>:$(cmake_list "${fc_cflags[@]}")>"
    INTERFACE_LINK_LIBRARIES "rankmig::rankmig;$(cmake_list "${fc_libs[@]}")")
endif()
unset(_rankmig_prefix)
unset(_rankmig_found_library)
EOF
  cat > "$STAGE/lib/cmake/rankmig/rankmigConfigVersion.cmake" <<EOF
# rankmig $VERSION: compatible with a request of the same major version, at most this one
# (CMake's SameMajorVersion).
set(PACKAGE_VERSION "$VERSION")
if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "$MAJOR" AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
else()
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF
}

write_pc
write_cmake

# Man pages and completions, generated by the command just installed.
if [ "$LIBRARY_ONLY" = 0 ]; then
  "$STAGE/bin/rankmig" man --dir "$STAGE/share/man/man1"
  mkdir -p "$STAGE/share/bash-completion/completions" "$STAGE/share/zsh/site-functions" \
    "$STAGE/share/fish/vendor_completions.d"
  "$STAGE/bin/rankmig" completions bash > "$STAGE/share/bash-completion/completions/rankmig"
  "$STAGE/bin/rankmig" completions zsh > "$STAGE/share/zsh/site-functions/_rankmig"
  "$STAGE/bin/rankmig" completions fish > "$STAGE/share/fish/vendor_completions.d/rankmig.fish"
fi

# The manifest: every file and link under the stage that this run wrote.
manifest="$STAGE/$MANIFEST_NAME"
{
  [ "$LIBRARY_ONLY" = 1 ] || echo "bin/rankmig"
  for f in "librankmig.so.$VERSION" "$SONAME" librankmig.so librankmig.a pkgconfig/rankmig.pc \
    cmake/rankmig/rankmigConfig.cmake cmake/rankmig/rankmigConfigVersion.cmake; do
    echo "lib/$f"
  done
  if [ "$FORTRAN" = 1 ]; then
    printf '%s\n' lib/librankmig_fortran.a lib/pkgconfig/rankmig-fortran.pc include/rankmig.mod include/rankmig_f08.mod
  fi
  printf '%s\n' include/rankmig.h include/rankmig.f90
  if [ "$LIBRARY_ONLY" = 0 ]; then
    (cd "$STAGE" && find share/man/man1 -name 'rankmig*.1' | sort)
    printf '%s\n' share/bash-completion/completions/rankmig share/zsh/site-functions/_rankmig \
      share/fish/vendor_completions.d/rankmig.fish
  fi
} > "$manifest"
echo "install.sh: installed $(wc -l < "$manifest") files into $STAGE (list: $manifest)" >&2
