#!/bin/sh
# identical.sh: the code generator's output, byte for byte, against a record.
# Every .ph file of the repository and 300 generated programs (phgen_dump,
# seeds 1-300) go through phc for sm_80 and sm_90; each run's exit status,
# PTX and diagnostics are hashed into one line of tests/ptx/hashes.txt (the
# generated programs' sources too, so a change of the generator shows).
# A change of one byte in any of them fails the check; a change meant to
# alter the code is recorded again with --record, in the same commit.
#
#   BUILD=build sh tests/ptx/identical.sh [--record]
set -eu
BUILD=${BUILD:-build}
PHC=$BUILD/bin/phc
RECORD=tests/ptx/hashes.txt
work=$BUILD/ptx-identical
rm -rf "$work" && mkdir -p "$work/gen"
"$BUILD/tests/phgen_dump" "$work/gen" 300

# one line per (file, arch): sha256 of status, output and diagnostics
hash_one() {
    arch=$1 file=$2
    status=0
    "$PHC" --arch="$arch" "$file" -o "$work/out.$arch" 2>"$work/err.$arch" || status=$?
    sum=$( { echo "status $status"; cat "$work/out.$arch" 2>/dev/null || true; echo "-- stderr"; cat "$work/err.$arch"; } | sha256sum | cut -c1-64)
    rm -f "$work/out.$arch" "$work/err.$arch"
    echo "$sum $arch $file"
}

{ git ls-files '*.ph' 2>/dev/null || find . -name '*.ph' -not -path "./$BUILD/*"; } | sort > "$work/files"
ls "$work/gen"/*.ph | sort -V >> "$work/files"
: > "$work/hashes"
for arch in sm_80 sm_90; do
    while read -r f; do hash_one "$arch" "$f"; done < "$work/files" >> "$work/hashes" &
done
wait
for f in "$work/gen"/*.ph; do echo "$(sha256sum < "$f" | cut -c1-64) source $f"; done >> "$work/hashes"
sed "s|$work/gen/|generated/|" "$work/hashes" | sort -k3,3V -k2,2 > "$work/hashes.sorted"

if [ "${1:-}" = --record ]; then
    cp "$work/hashes.sorted" "$RECORD"
    echo "identical.sh: recorded $(wc -l < "$RECORD") hashes in $RECORD"
    exit 0
fi
if ! diff -u "$RECORD" "$work/hashes.sorted" > "$work/diff"; then
    echo "identical.sh: the output differs from $RECORD for:"
    grep '^[-+][0-9a-f]' "$work/diff" | awk '{ print "  " $2 " " $3 }' | sort -u
    exit 1
fi
echo "identical.sh: $(wc -l < "$RECORD") outputs byte-identical to $RECORD"
