# gpurefusal.sh: sourced by gpucheck.sh and gpusanitize.sh. The one refusal
# that is no failure: a config needing more shared memory than a block of
# this device may have leaves before the driver sees it (docs/runtime.md,
# "Loading configs"); the run's other kernels go unchecked.
REFUSAL='[A-Za-z0-9_]* is refused: it needs [0-9]* bytes of shared memory, more than the [0-9]* a block of this device may have'

# refusal OUT: prints the refusal when OUT, an attention check's output,
# failed for it alone (one kernel's launch refused so, the verdict "a launch
# failed", no figure that differs); prints nothing and is false otherwise.
refusal() {
    why=$(printf '%s\n' "$1" | grep ' (gpu): ' | grep -o "$REFUSAL" | head -1)
    [ -n "$why" ] && printf '%s\n' "$1" | grep -qx 'attention: FAIL (a launch failed)' &&
        [ "$(printf '%s\n' "$1" | grep -c ' (gpu): ')" = 1 ] && ! printf '%s\n' "$1" | grep -q 'max diff.* FAIL' &&
        printf '%s\n' "$why"
}
