#!/usr/bin/env bash
# Downloads Open MPI 4.1.4's source as Debian ships it (bookworm, package openmpi
# 4.1.4-3) and extracts only TreeMatch (ompi/mca/topo/treematch/treematch/) into a
# cache directory. TreeMatch is not ours: it is never copied into this repository.
#
#   scripts/anchors/fetch_treematch.sh [DEST]      # default DEST: target/anchors/treematch
#
# Idempotent: does nothing when DEST already holds the extracted copy of the same
# tarball (a stamp file records its SHA-256). The tarball is cached next to DEST.
#
# The file name and checksum are those of `apt-get source --print-uris openmpi=4.1.4-3`
# (Debian bookworm's Sources index); none of Debian's patches of 4.1.4-3 touches
# TreeMatch, so the upstream tarball is what Debian compiles.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="${1:-$ROOT/target/anchors/treematch}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
FILE="openmpi_4.1.4.orig.tar.xz"
URL="$MIRROR/pool/main/o/openmpi/$FILE"
SHA256="ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263"
INNER="openmpi-4.1.4/ompi/mca/topo/treematch/treematch"

CACHE="$(dirname "$DEST")"
STAMP="$DEST/.fetched-from"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$FILE $SHA256" ] && [ -f "$DEST/treematch.h" ]; then
  echo "fetch_treematch: $DEST is up to date" >&2
  exit 0
fi

mkdir -p "$CACHE"
TARBALL="$CACHE/$FILE"
if ! echo "$SHA256  $TARBALL" | sha256sum -c --status 2>/dev/null; then
  echo "fetch_treematch: downloading $URL" >&2
  rm -f "$TARBALL.part"
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$TARBALL.part" "$URL"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$TARBALL.part" "$URL"
  else
    echo "fetch_treematch: need curl or wget" >&2
    exit 1
  fi
  if ! echo "$SHA256  $TARBALL.part" | sha256sum -c --status; then
    echo "fetch_treematch: checksum mismatch for $URL (expected $SHA256)" >&2
    rm -f "$TARBALL.part"
    exit 1
  fi
  mv "$TARBALL.part" "$TARBALL"
fi

TMP="$(mktemp -d "$CACHE/extract.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
tar -xJf "$TARBALL" -C "$TMP" "$INNER"
rm -rf "$DEST"
mv "$TMP/$INNER" "$DEST"
# Open MPI's configure writes an empty config.h next to the embedded TreeMatch (so it
# does not pick up hwloc's config.h): tm_kpartitioning.c includes it. Without
# HAVE_LIBSCOTCH defined, TreeMatch uses its own k-partitioning, as in Open MPI.
cat > "$DEST/config.h" <<'EOF'
/* Empty, as the one Open MPI's configure generates for its embedded TreeMatch. */
EOF
echo "$FILE $SHA256" > "$STAMP"
echo "fetch_treematch: TreeMatch of Open MPI 4.1.4 in $DEST" >&2
