#!/bin/sh
# doc_blocks.sh: holds a page of docs/ to its code blocks, so that what a
# reader copies is what the project tests.
#
#   sh tests/doc_blocks.sh DOC.md         the files shown on the page are the files
#   sh tests/doc_blocks.sh --run DOC.md   that, then runs the page's commands
#
# Each fenced block of the page is one of:
#   - a block after a line `<!-- file: PATH -->`: part of that file; the
#     blocks marked with one PATH, in order and joined by an empty line,
#     must be the whole file (the page may show a file in pieces);
#   - a ```sh block: commands. With --run every such block runs, in order, in
#     one shell (so `cd` and `export` carry over) started at the top of the
#     source tree with HOME a new empty folder, so that nothing the page
#     installs or writes under ~ is left behind; any failing command fails
#     the check;
#   - a ```text block: what the ```sh block before it prints (standard
#     output and error together), compared with it exactly under --run.
# Any other block is an error: nothing would check it.
# Without a python3 that has NumPy (the first of $PYTHON and Debian's
# python3 that has it is the python3 the commands get), the blocks from the
# first one that runs python3 on are skipped, and the check says so.
set -eu
run=false
[ "${1:-}" = --run ] && { run=true; shift; }
[ $# -eq 1 ] || { echo "usage: sh tests/doc_blocks.sh [--run] DOC.md" >&2; exit 2; }
doc=$1
[ -f "$doc" ] || { echo "doc_blocks: no file $doc" >&2; exit 2; }
tmp=$(cd "$(mktemp -d /tmp/phc-doc.XXXXXX)" && pwd -P)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "doc_blocks: $doc: $*" >&2; exit 1; }

# Splits the page: block N's text goes to $tmp/blocks/N, and one line
# "N LANG LINE FILE" per block to $tmp/index (FILE is - where none is marked).
mkdir "$tmp/blocks"
awk -v dir="$tmp/blocks" '
    function flush_marker() { marker = "-" }
    BEGIN { n = 0; inside = 0; flush_marker() }
    inside && /^```[ \t]*$/ { inside = 0; close(out); flush_marker(); next }
    inside { print > out; next }
    /^```/ {
        lang = substr($0, 4); sub(/[ \t]+$/, "", lang); if (lang == "") lang = "-"
        n++; out = sprintf("%s/%03d", dir, n); inside = 1
        printf "" > out
        printf "%03d %s %d %s\n", n, lang, NR, marker
        next
    }
    /^<!-- file: [^ ]+ -->[ \t]*$/ { marker = $3; next }
    /^[ \t]*$/ { next }
    { flush_marker() }
    END { if (inside) printf "unclosed\n" }
' "$doc" > "$tmp/index"
grep -q '^unclosed$' "$tmp/index" && fail "a code block is not closed"
[ -s "$tmp/index" ] || fail "no code block"

# Every block is of a kind something checks.
prev=
while read -r n lang line file; do
    if [ "$file" != - ]; then :
    elif [ "$lang" = sh ]; then :
    elif [ "$lang" = text ]; then
        [ "$prev" = sh ] || fail "line $line: a text block that follows no sh block"
    else fail "line $line: a $lang block that is neither marked '<!-- file: PATH -->' nor sh nor text"
    fi
    if [ "$file" = - ]; then prev=$lang; else prev=file; fi
done < "$tmp/index"

# The files shown are the files: their parts, joined by an empty line.
for file in $(awk '$4 != "-" { print $4 }' "$tmp/index" | sort -u); do
    [ -f "$file" ] || fail "the page shows $file, which is not in the source tree"
    : > "$tmp/joined"
    first=true
    for n in $(awk -v f="$file" '$4 == f { print $1 }' "$tmp/index"); do
        $first || echo >> "$tmp/joined"
        cat "$tmp/blocks/$n" >> "$tmp/joined"
        first=false
    done
    diff -u "$file" "$tmp/joined" > "$tmp/file.diff" || { cat "$tmp/file.diff" >&2; fail "the blocks of $file differ from the file (+ on the page)"; }
    echo "doc_blocks: $doc shows $file as it is"
done
$run || exit 0

# The python3 the commands get: one that has NumPy, when there is one.
mkdir "$tmp/bin" "$tmp/home" "$tmp/out"
python=
for p in ${PYTHON:-python3} /usr/bin/python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then python=$(command -v "$p"); break; fi
done
[ -n "$python" ] && ln -s "$python" "$tmp/bin/python3"

# One script sources the blocks in order, each one's output to its own file;
# $tmp/at names the block running, so a failure can be shown.
script=$tmp/run.sh
echo 'set -eu' > "$script"
skipped=
while read -r n lang line file; do
    [ "$lang" = sh ] && [ "$file" = - ] || continue
    if [ -z "$python" ] && grep -q 'python3' "$tmp/blocks/$n"; then skipped=$line; break; fi
    printf 'echo %s > "%s/at"\n. "%s/blocks/%s" > "%s/out/%s" 2>&1\n' "$n" "$tmp" "$tmp" "$n" "$tmp" "$n" >> "$script"
done < "$tmp/index"
echo "echo done > \"$tmp/at\"" >> "$script"

unset LD_LIBRARY_PATH PHOBOS_TARGET PHOBOS_LIBRARY PHOBOS_CACHE_DIR PKG_CONFIG_PATH PYTHONPATH
if ! HOME=$tmp/home PATH="$tmp/bin:$PATH" sh "$script"; then
    n=$(cat "$tmp/at")
    line=$(awk -v n="$n" '$1 == n { print $3 }' "$tmp/index")
    echo "doc_blocks: the commands at $doc:$line failed:" >&2
    sed 's/^/    /' "$tmp/blocks/$n" >&2
    echo "doc_blocks: they printed:" >&2
    sed 's/^/    /' "$tmp/out/$n" >&2
    exit 1
fi

# Each text block is what the sh block before it printed.
ran=0 compared=0
prev=
while read -r n lang line file; do
    if [ "$lang" = text ] && [ "$file" = - ] && [ -f "$tmp/out/$prev" ]; then
        diff -u "$tmp/blocks/$n" "$tmp/out/$prev" > "$tmp/out.diff" \
            || { cat "$tmp/out.diff" >&2; fail "line $line: the output differs from the page's (+ printed now)"; }
        compared=$((compared + 1))
    fi
    if [ "$lang" = sh ] && [ "$file" = - ]; then
        prev=$n
        [ -f "$tmp/out/$n" ] && ran=$((ran + 1))
    fi
done < "$tmp/index"
echo "doc_blocks: $doc: ran $ran command blocks, $compared outputs as shown${skipped:+; skipped the blocks from line $skipped on: no python3 with NumPy (make deps-python)}"
