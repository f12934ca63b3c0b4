#!/bin/sh
# install_test.sh - install into a staging directory, build a consumer
# (tests/consumer/) against it with pkg-config (shared, then static) and
# with CMake's find_package, run each, then uninstall and require that
# nothing is left.  Needs pkg-config and cmake.
# Usage: tests/install_test.sh   (from the project root, after `make`)
set -u
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "install: FAIL $*"; }
prefix="$stage/usr"
make -s install PREFIX="$prefix" >/dev/null || bad "make install"
pc="$prefix/lib/pkgconfig"
for f in include/vidmm/vidmm.h include/vidmm/version.h include/vidmm/drvcheck.h lib/libvidmm.a lib/libsoftgpu.a lib/libvidmm.so lib/pkgconfig/vidmm.pc \
         lib/pkgconfig/softgpu.pc lib/cmake/vidmm/vidmmConfig.cmake share/man/man1/vidmm.1 bin/vidmm \
         bin/vidmmd lib/libvidmm-client.a include/vidmm-client/client.h \
         lib/systemd/system/vidmmd.service lib/systemd/system/vidmmd.socket \
         lib/libsoftgpu.so lib/libvidmm-client.so lib/libvidmm-d3dkmt.so lib/libvidmm-d3dkmt.a \
         include/d3dkmt/d3dkmthk.h lib/pkgconfig/vidmm-client.pc lib/pkgconfig/vidmm-d3dkmt.pc share/man/man8/vidmmd.8; do
  if [ -e "$prefix/$f" ]; then ok; else bad "not installed: $f"; fi
done
major=$(sed -n 's/^#define VIDMM_VERSION_MAJOR \([0-9]*\)/\1/p' include/vidmm/version.h)
if [ -e "$prefix/lib/libvidmm.so.$major" ]; then ok; else bad "no libvidmm.so.$major link"; fi
ver=$(PKG_CONFIG_PATH="$pc" pkg-config --modversion vidmm)
want=$(sed -n 's/^#define VIDMM_VERSION_STRING "\(.*\)"/\1/p' include/vidmm/version.h)
if [ "$ver" = "$want" ]; then ok; else bad "vidmm.pc says $ver, the header $want"; fi
# pkg-config, shared library
if cc -std=c11 -Wall -Werror tests/consumer/consumer.c -o "$stage/c-shared" \
     $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs softgpu vidmm) -lpthread -lm &&
   LD_LIBRARY_PATH="$prefix/lib" "$stage/c-shared" >/dev/null; then ok; else bad "pkg-config shared consumer"; fi
if ldd "$stage/c-shared" 2>/dev/null | grep -q "libvidmm.so.$major"; then ok; else bad "shared consumer does not load libvidmm.so.$major"; fi
# The D3DKMT front end and the client, shared, through pkg-config.
if cc -std=c11 -Wall -Werror tests/consumer/d3dkmt_consumer.c -o "$stage/d-shared" \
     $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs vidmm-d3dkmt vidmm-client softgpu vidmm) &&
   LD_LIBRARY_PATH="$prefix/lib" "$stage/d-shared" >/dev/null; then ok; else bad "pkg-config D3DKMT and client consumer"; fi
for l in softgpu vidmm-client vidmm-d3dkmt; do
  if readelf -d "$prefix/lib/lib$l.so" | grep -q "SONAME.*lib$l.so.$major\]"; then ok; else bad "lib$l.so: no SONAME lib$l.so.$major"; fi
done
# The driver kit's header: a plug-in builds against the install alone.
if cc -std=c11 -Wall -Werror -shared -fPIC tests/drvcheck/invisible_vram.c -o "$stage/invisible_vram.so" \
     $(PKG_CONFIG_PATH="$pc" pkg-config --cflags vidmm) -lpthread; then ok; else bad "a drvcheck plug-in against the install"; fi
# pkg-config, static
if cc -std=c11 -Wall -Werror tests/consumer/consumer.c -o "$stage/c-static" \
     $(PKG_CONFIG_PATH="$pc" pkg-config --cflags softgpu vidmm) "$prefix/lib/libsoftgpu.a" "$prefix/lib/libvidmm.a" \
     $(PKG_CONFIG_PATH="$pc" pkg-config --static --libs-only-l vidmm | sed 's/-lvidmm//') &&
   "$stage/c-static" >/dev/null; then ok; else bad "pkg-config static consumer"; fi
# CMake
if command -v cmake >/dev/null 2>&1; then
  if cmake -S tests/consumer -B "$stage/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >"$stage/cmake.log" 2>&1 &&
     cmake --build "$stage/cmake-build" >>"$stage/cmake.log" 2>&1 &&
     LD_LIBRARY_PATH="$prefix/lib" "$stage/cmake-build/consumer" >/dev/null &&
     LD_LIBRARY_PATH="$prefix/lib" "$stage/cmake-build/d3dkmt_consumer" >/dev/null; then ok; else bad "CMake consumer: $(tail -5 "$stage/cmake.log")"; fi
  # Relocatable: the tree moved elsewhere is still found, by CMake from the
  # package file's place and by pkg-config --define-prefix.
  cp -a "$prefix" "$stage/moved"
  if cmake -S tests/consumer -B "$stage/cmake-moved" -DCMAKE_PREFIX_PATH="$stage/moved" >"$stage/cmake-moved.log" 2>&1 &&
     cmake --build "$stage/cmake-moved" >>"$stage/cmake-moved.log" 2>&1 &&
     LD_LIBRARY_PATH="$stage/moved/lib" "$stage/cmake-moved/consumer" >/dev/null &&
     ! grep -rq "$prefix" "$stage/moved/lib/cmake/vidmm/"; then ok; else
    bad "CMake package not relocatable: $(tail -5 "$stage/cmake-moved.log")"; fi
  if [ "$(PKG_CONFIG_PATH="$stage/moved/lib/pkgconfig" pkg-config --define-prefix --cflags vidmm | sed "s/ *$//")" = "-I$stage/moved/include" ]
  then ok; else bad "vidmm.pc not relocatable with --define-prefix"; fi
  rm -rf "$stage/moved"
  # An incompatible version is refused.
  sed 's/find_package(vidmm 0.2 REQUIRED)/find_package(vidmm 9.0 REQUIRED)/' tests/consumer/CMakeLists.txt > "$stage/CMakeLists.txt"
  mkdir -p "$stage/src9" && cp "$stage/CMakeLists.txt" tests/consumer/consumer.c "$stage/src9/"
  if cmake -S "$stage/src9" -B "$stage/cmake9" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
    bad "find_package(vidmm 9.0) accepted version $want"
  else ok; fi
else
  bad "cmake not installed"
fi
# vidmmd's units: ExecStart names the installed daemon; systemd's own
# checker reads them when the machine has it.
if grep -q "^ExecStart=$prefix/bin/vidmmd " "$prefix/lib/systemd/system/vidmmd.service"; then ok; else
  bad "vidmmd.service does not start $prefix/bin/vidmmd"; fi
if command -v systemd-analyze >/dev/null 2>&1; then
  if (cd "$prefix/lib/systemd/system" && systemd-analyze verify --man=no ./vidmmd.socket ./vidmmd.service) \
       >"$stage/verify.log" 2>&1; then ok; else bad "systemd-analyze verify: $(cat "$stage/verify.log")"; fi
else
  . tests/skip.sh
  optional "install: systemd unit check" "systemd-analyze is not installed"
fi
# DESTDIR stages under it, with the final paths in the units.
make -s install PREFIX=/usr/local DESTDIR="$stage/dest" >/dev/null || bad "make install DESTDIR"
if grep -q "^ExecStart=/usr/local/bin/vidmmd " "$stage/dest/usr/local/lib/systemd/system/vidmmd.service" 2>/dev/null &&
   [ -x "$stage/dest/usr/local/bin/vidmmd" ]; then ok; else bad "DESTDIR install of vidmmd and its units"; fi
make -s uninstall PREFIX=/usr/local DESTDIR="$stage/dest" >/dev/null || bad "make uninstall DESTDIR"
left=$(find "$stage/dest" -type f -o -type l | tr '\n' ' ')
if [ -z "$left" ]; then ok; else bad "left after DESTDIR uninstall: $left"; fi
make -s uninstall PREFIX="$prefix" >/dev/null || bad "make uninstall"
left=$(find "$prefix" -type f -o -type l | sed "s|$prefix/||" | tr '\n' ' ')
if [ -z "$left" ]; then ok; else bad "left after uninstall: $left"; fi
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
