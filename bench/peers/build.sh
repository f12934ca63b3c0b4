#!/bin/sh
# build.sh KIT [make variables...] - `make bench` with the peer kit's
# allocators linked in, plus this directory's E and G hooks.
#
#   bench/peers/build.sh PEER_KIT_DIR BENCH_ARGS="--only A,B2,C,E,G"
#
# Run from the project root.  KIT is the peer kit (its compare.sh, vendored
# kernel tree, shim and glue).  Its compare.sh --build-only builds the
# peers' objects into $PEERS_BUILD (default build-bench/peers); this script
# then compiles e_drm_mm.c and g_drm_gpuvm.c here against the kit's kernel
# headers and shim (they cannot build with the project's flags: kernel
# headers), and links everything into build-bench/vidmm-bench through the
# Makefile's PEERS and PEER_LIBS.  Every workload then measures its peers
# in the same run, E and G included.
# shellcheck disable=SC2086
set -eu
KIT=${1:?usage: bench/peers/build.sh PEER_KIT_DIR [make variables...]}
shift
KIT=$(cd "$KIT" && pwd)
"$KIT/compare.sh" --build-only
OUT=${PEERS_BUILD:-build-bench/peers}
LNX=$(ls -d "$KIT"/vendor/linux-* | head -n 1)
KFLAGS="-std=gnu11 -O2 -DNDEBUG -g -fno-strict-aliasing -I$KIT/shim -I$KIT/shim/include -I$LNX/include -I$LNX/tools/include -Ibench"
for g in e_drm_mm g_drm_gpuvm; do
    echo "  CC  $OUT/hook_$g.o"
    ${CC:-cc} $KFLAGS -w -c "bench/peers/$g.c" -o "$OUT/hook_$g.o"
done
O=$OUT
PEER_OBJS="$O/vma_impl.o $O/peer_vma_minmem.o $O/peer_vma_default.o $O/offsetAllocator.o $O/peer_offsetalloc.o \
$O/buddy.o $O/peer_gpu_buddy.o $O/peer_gpu_buddy_contig.o $O/drm_mm.o $O/peer_drm_mm_best.o $O/drm_gpuvm.o \
$O/rbtree.o $O/kshim.o $O/hook_e_drm_mm.o $O/hook_g_drm_gpuvm.o"
exec make bench PEERS="$PEER_OBJS $KIT/lists/peers_abc.c" PEER_LIBS="-lstdc++" "$@"
