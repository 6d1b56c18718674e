#!/bin/sh
# install_check.sh: make install into a temporary prefix and use what it
# put there, as a user would: the files and links, the library's soname
# and its exports (phobos.h's functions and phc's private entries, which
# it lists; nothing else), the installed phc
# (its version, the attention tutorial compiled, its library found beside
# it, also once the tree is moved), a host program built with pkg-config
# against the installed header and library; a staged install (DESTDIR);
# then make uninstall, which must leave no file behind. Run by make check.
set -eu
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
tmp=$(cd "$(mktemp -d /tmp/phc-install.XXXXXX)" && pwd -P)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install-check: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH

header_version() { sed -n "s/^#define PH_VERSION_$1 *\([0-9][0-9]*\)$/\1/p" runtime/include/phobos.h; }
major=$(header_version MAJOR)
version=$major.$(header_version MINOR).$(header_version PATCH)

$MAKE -s install BUILD="$BUILD" PREFIX="$prefix"
for f in bin/phc lib/libphobos.so.$version include/phobos.h lib/pkgconfig/phobos.pc; do
    [ -f "$prefix/$f" ] && [ ! -L "$prefix/$f" ] || fail "no file $f"
done
[ "$(readlink "$prefix/lib/libphobos.so.$major")" = "libphobos.so.$version" ] || fail "libphobos.so.$major is no link to libphobos.so.$version"
[ "$(readlink "$prefix/lib/libphobos.so")" = "libphobos.so.$major" ] || fail "libphobos.so is no link to libphobos.so.$major"
readelf -d "$prefix/lib/libphobos.so.$version" | grep -q "SONAME.*\[libphobos.so.$major\]" || fail "the library's soname is not libphobos.so.$major"

# The library exports the functions phobos.h declares and the private
# entries runtime/phobos.map lists after its "private:" line (phc's), and
# nothing else.
nm -D --defined-only "$prefix/lib/libphobos.so.$version" | awk '{print $3}' | sort > "$tmp/exported"
grep -E '^[a-zA-Z].*[ *]ph_[a-z0-9_]+\(' "$prefix/include/phobos.h" | grep -v 'static inline' \
    | grep -oE 'ph_[a-z0-9_]+\(' | tr -d '(' | sort > "$tmp/declared"
[ -s "$tmp/declared" ] || fail "found no function in phobos.h"
sed -n '/private:/,/local:/p' runtime/phobos.map | sed -n 's/^ *\([a-z_][a-z0-9_]*\);$/\1/p' | sort > "$tmp/private"
grep -qxFf "$tmp/private" "$tmp/declared" && fail "phobos.map lists a function of phobos.h as private: $(grep -xFf "$tmp/private" "$tmp/declared")"
sort "$tmp/declared" "$tmp/private" > "$tmp/allowed"
diff "$tmp/allowed" "$tmp/exported" > "$tmp/exports.diff" \
    || { cat "$tmp/exports.diff" >&2; fail "exports differ from phobos.h and phobos.map's private list (< allowed only, > exported only)"; }

# The library a program loads, as a path without links.
loads() { ldd "$1" | awk -v lib="libphobos.so.$major" '$1 == lib { print $3 }' | xargs -r readlink -f; }

# The installed phc: its library is the installed one, found through its runpath.
[ "$(loads "$prefix/bin/phc")" = "$prefix/lib/libphobos.so.$version" ] || { ldd "$prefix/bin/phc" >&2; fail "phc does not load $prefix/lib/libphobos.so.$major"; }
[ "$("$prefix/bin/phc" --version)" = "phc $version" ] || fail "phc --version says $("$prefix/bin/phc" --version)"
"$prefix/bin/phc" examples/attention/attention.ph -o "$tmp/attention.ptx"
entries=$(grep -c '^\.visible \.entry ' "$tmp/attention.ptx") || true
[ "$entries" -gt 0 ] && grep -q 'mma.sync' "$tmp/attention.ptx" || fail "the installed phc wrote no attention PTX ($entries entries)"

# A host program built against the installed header and library through pkg-config.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cat > "$tmp/host.c" <<'HOST'
/* Says the library's version and compiles a kernel to PTX ahead of time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <phobos.h>

int main(void)
{
    char want[32], *ptx = NULL;
    snprintf(want, sizeof want, "%d.%d.%d", PH_VERSION_MAJOR, PH_VERSION_MINOR, PH_VERSION_PATCH);
    if (strcmp(ph_version(), want)) { printf("ph_version() is %s, phobos.h says %s\n", ph_version(), want); return 1; }
    const char *src = "import phobos.lang as ph\n@ph.kernel\ndef copy(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):\n"
                      "    Y[0:+128] = X[0:+128]\n";
    if (ph_compile("copy.ph", src, NULL, &ptx) != PH_OK) { printf("ph_compile: %s\n", ph_last_error()); return 1; }
    int ok = strstr(ptx, ".entry copy(") != NULL;
    free(ptx);
    printf("phobos %s%s\n", ph_version(), ok ? "" : ": no entry copy in the PTX");
    return !ok;
}
HOST
cflags=$(pkg-config --cflags phobos)
libs=$(pkg-config --libs phobos)
case "$cflags" in *"-I$prefix/include"*) ;; *) fail "pkg-config --cflags phobos is '$cflags'" ;; esac
case "$libs" in *"-L$prefix/lib"*-lphobos*) ;; *) fail "pkg-config --libs phobos is '$libs'" ;; esac
[ "$(pkg-config --modversion phobos)" = "$version" ] || fail "pkg-config --modversion phobos is $(pkg-config --modversion phobos)"
${CC:-cc} -std=c11 -Wall -Wextra -Werror "$tmp/host.c" -o "$tmp/host" $cflags $libs -Wl,-rpath,"$(pkg-config --variable=libdir phobos)"
[ "$("$tmp/host")" = "phobos $version" ] || fail "the host program says: $("$tmp/host")"

# A copy of the installed tree still runs: phc looks in ../lib beside itself.
cp -a "$prefix" "$tmp/moved"

# make uninstall leaves no file (or link) behind.
$MAKE -s uninstall BUILD="$BUILD" PREFIX="$prefix"
left=$(find "$prefix" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"

[ "$(loads "$tmp/moved/bin/phc")" = "$tmp/moved/lib/libphobos.so.$version" ] || fail "a moved phc does not load the library beside it"
[ "$("$tmp/moved/bin/phc" --version)" = "phc $version" ] || fail "a moved phc does not run"

# A staged install: the files under DESTDIR, the paths inside them for PREFIX.
$MAKE -s install BUILD="$BUILD" PREFIX=/opt/phobos DESTDIR="$tmp/stage"
[ -f "$tmp/stage/opt/phobos/bin/phc" ] || fail "DESTDIR: no $tmp/stage/opt/phobos/bin/phc"
grep -qx 'prefix=/opt/phobos' "$tmp/stage/opt/phobos/lib/pkgconfig/phobos.pc" || fail "DESTDIR: phobos.pc's prefix is not /opt/phobos"
$MAKE -s uninstall BUILD="$BUILD" PREFIX=/opt/phobos DESTDIR="$tmp/stage"
left=$(find "$tmp/stage" ! -type d)
[ -z "$left" ] || fail "make uninstall with DESTDIR left: $left"

echo "install-check: phc $version and libphobos.so.$version installed, used through pkg-config, moved and uninstalled;" \
     "the library exports phobos.h's $(wc -l < "$tmp/declared") functions and, private, $(echo $(cat "$tmp/private"))"
