#!/usr/bin/env bash
# The README quickstart, end to end, in a fresh private runtime root: start the researcher agent
# and let it suspend after two turns, look at the run and its events, export and inspect its
# snapshot, resume it until it asks the operator a question, and answer it so that it completes.
# Needs a build (`npm run build`); prints each command before its output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -f dist/src/cli/main.js ] || npm run build

loopx() { node bin/loopx.js "$@"; }
show() { local a out='$ loopx'; for a in "$@"; do [[ $a =~ ^[A-Za-z0-9_./:=-]+$ ]] && out+=" $a" || out+=" '$a'"; done; printf '\n%s\n' "$out"; }
run() { show "$@"; loopx "$@"; }

WORK="$(mktemp -d)"
export LOOPX_HOME="$WORK/root"

run run start --agent examples/agents/researcher.json --suspend-after-turns 2
RUN="$(loopx run list --json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).runs[0].run_id')"
run run show "$RUN"
run run events "$RUN" --follow
run run export "$RUN" --out "$WORK/run.snapshot"
run run inspect "$WORK/run.snapshot" --json
run run resume "$RUN"
run run answer "$RUN" confirm-1 "Yes, 42."
run run events "$RUN" --after 12
printf '\nruntime root and snapshot are in %s\n' "$WORK"
