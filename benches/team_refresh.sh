#!/usr/bin/env bash
# The cost of a team guidebook's refresh (src/sources/team.rs), measured by running the same git
# invocations the code runs, in the same order, against a local bare repository holding
# GUIDELINES guideline directories:
#   - the first clone (clone into .checkout.tmp, rename, rev-parse HEAD),
#   - a refresh with nothing new (rev-parse HEAD, fetch, rev-parse FETCH_HEAD, checkout, clean),
#   - a refresh after a one-file commit was pushed (the same steps; the push is not timed).
# Each is run RUNS times; the median and the range are printed in milliseconds. The remote is a
# local path (fetched with --no-local, as the code does), so this is git's own work, not a
# network's: over https or ssh add the round trips.
#
# Usage: benches/team_refresh.sh            (GUIDELINES=1000 RUNS=9 by default)
#        GUIDELINES=10000 RUNS=5 benches/team_refresh.sh
# The machine's git config is left out (GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1).
set -euo pipefail

GUIDELINES=${GUIDELINES:-1000}
RUNS=${RUNS:-9}

export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR

work=$(mktemp -d "${TMPDIR:-/tmp}/team-refresh.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The options team.rs puts before every subcommand (SAFE_CONFIG) and run_git's own.
SAFE=(--literal-pathspecs -c core.hooksPath=/dev/null -c core.fsmonitor=false
    -c core.symlinks=false -c submodule.recurse=false -c protocol.ext.allow=never
    -c transfer.fsckObjects=true)
CLONE_OPTS=(clone --quiet --template= --no-local --depth 1 --no-tags --single-branch
    --config core.symlinks=false --config core.hooksPath=/dev/null)

setup_git() { git -c user.name=Bench -c user.email=bench@example.invalid -c init.defaultBranch=main "$@"; }

echo "team_refresh: $GUIDELINES guidelines, $RUNS runs each, $(git --version)"
remote="$work/team.git"
src="$work/src"
setup_git init -q --bare "$remote"
setup_git init -q "$src"
for i in $(seq 1 "$GUIDELINES"); do
    d="$src/guidelines/g$i"
    mkdir -p "$d"
    printf 'id: g%s\nscope:\n  languages: [python]\nmatch:\n  regex:\n    pattern: '\''\\bprint_%s\\('\''\ncontent: |\n  Guideline %s: use the logger, not print_%s.\n' \
        "$i" "$i" "$i" "$i" >"$d/guideline.yaml"
done
setup_git -C "$src" add -A
setup_git -C "$src" commit -q -m "$GUIDELINES guidelines"
setup_git -C "$src" push -q "$remote" HEAD:refs/heads/main
echo "remote: $(du -sh "$remote" | cut -f1) on disk"

now_ns() { date +%s%N; }

# Prints "median min max" in ms of the numbers (ns) given.
stats() {
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 / 1e6 }
        END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
              printf "median %.1f ms  (min %.1f, max %.1f, n=%d)\n", m, v[1], v[NR], NR }'
}

# The first clone, as TeamSource::clone_into_place and refresh_locked run it.
first_clone() {
    local dir=$1
    mkdir -p "$dir"
    git -C "$dir" "${SAFE[@]}" "${CLONE_OPTS[@]}" -- "$remote" .checkout.tmp
    mv "$dir/.checkout.tmp" "$dir/checkout"
    git -C "$dir/checkout" "${SAFE[@]}" rev-parse --verify --quiet HEAD >/dev/null
}

# A later refresh, as TeamSource::refresh_locked and fetch run it.
refresh() {
    local co=$1/checkout
    git -C "$co" "${SAFE[@]}" rev-parse --verify --quiet HEAD >/dev/null
    git -C "$co" "${SAFE[@]}" fetch --quiet --depth 1 --no-tags -- "$remote" HEAD
    local new
    new=$(git -C "$co" "${SAFE[@]}" rev-parse --verify --quiet 'FETCH_HEAD^{commit}')
    git -C "$co" "${SAFE[@]}" checkout --quiet --force --detach "$new"
    git -C "$co" "${SAFE[@]}" clean -ffdxq
}

echo
echo "commands (git -C <dir> ${SAFE[*]} ...):"
echo "  first clone: ${CLONE_OPTS[*]} -- <remote> .checkout.tmp; rename to checkout; rev-parse --verify --quiet HEAD"
echo "  refresh:     rev-parse --verify --quiet HEAD; fetch --quiet --depth 1 --no-tags -- <remote> HEAD;"
echo "               rev-parse --verify --quiet FETCH_HEAD^{commit}; checkout --quiet --force --detach <id>; clean -ffdxq"
echo

clone_ns=()
for r in $(seq 1 "$RUNS"); do
    t0=$(now_ns)
    first_clone "$work/clone$r"
    clone_ns+=($(($(now_ns) - t0)))
done
echo "first clone:            $(stats "${clone_ns[@]}")"

home="$work/clone1"
refresh "$home" # warm
same_ns=()
for r in $(seq 1 "$RUNS"); do
    t0=$(now_ns)
    refresh "$home"
    same_ns+=($(($(now_ns) - t0)))
done
echo "refresh, no change:     $(stats "${same_ns[@]}")"

changed_ns=()
for r in $(seq 1 "$RUNS"); do
    echo "  changed in run $r" >>"$src/guidelines/g1/guideline.yaml"
    setup_git -C "$src" commit -q -am "one file, run $r"
    setup_git -C "$src" push -q "$remote" HEAD:refs/heads/main
    t0=$(now_ns)
    refresh "$home"
    changed_ns+=($(($(now_ns) - t0)))
    test "$(git -C "$home/checkout" rev-parse HEAD)" = "$(git -C "$src" rev-parse HEAD)"
done
echo "refresh, one-file commit: $(stats "${changed_ns[@]}")"
echo "checkout on disk: $(du -sh "$home/checkout" | cut -f1) ($(du -sh "$home/checkout/.git" | cut -f1) of it .git)"
