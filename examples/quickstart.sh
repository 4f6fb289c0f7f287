#!/usr/bin/env bash
# The README quickstart, end to end, in fresh private runtime roots: start the researcher agent
# and let it suspend after two turns, look at the run and its events, export and inspect its
# snapshot, resume it until it asks the operator a question, and answer it so that it completes.
# Then the RFC 0007 journey: move a suspended run from root A to root B (export, verify, import,
# resume there), and watch loopx refuse a second import, root A's stale copy, and a snapshot
# signed by another run authority.
# Needs a build (`npm run build`); prints each command before its output. Uses your per-user run
# authority (--authority-dir, else $XDG_STATE_HOME/loopx/run-authority, else
# ~/.local/state/loopx/run-authority); set XDG_STATE_HOME to a fresh directory to keep it apart.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -f dist/src/cli/main.js ] || npm run build

loopx() { node bin/loopx.js "$@"; }
show() { local a out='$ loopx'; for a in "$@"; do [[ $a =~ ^[A-Za-z0-9_./:=-]+$ ]] && out+=" $a" || out+=" '$a'"; done; printf '\n%s\n' "$out"; }
run() { show "$@"; loopx "$@"; }
# A command that loopx must refuse: print its error and exit code, and go on.
refuse() { show "$@"; local rc=0; loopx "$@" 2>&1 || rc=$?; [ "$rc" -ne 0 ] || { echo "expected a refusal" >&2; exit 1; }; echo "(exit $rc)"; }
first_run() { loopx run list --root "$1" --json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).runs[0].run_id'; }

WORK="$(mktemp -d)"
export LOOPX_HOME="$WORK/root"

# ── Quickstart ──
run run start --agent examples/agents/researcher.json --suspend-after-turns 2
RUN="$(first_run "$LOOPX_HOME")"
run run show "$RUN"
run run events "$RUN" --follow
run run export "$RUN" --out "$WORK/run.snapshot"
run run inspect "$WORK/run.snapshot" --json
run run resume "$RUN"
run run answer "$RUN" confirm-1 "Yes, 42."
run run events "$RUN" --after 12

# ── Move a run to another root: roots A and B share your run authority ──
A="$WORK/A"
B="$WORK/B"
run run start --agent examples/agents/researcher.json --root "$A" --suspend-after-turns 2
ID="$(first_run "$A")"
run run export "$ID" --root "$A" --out "$WORK/move.snapshot"
run run inspect "$WORK/move.snapshot" --verify
run run import "$WORK/move.snapshot" --root "$B"
run authority show --run "$ID"
refuse run import "$WORK/move.snapshot" --root "$WORK/C"   # snapshot_consumed (exit 4)
refuse run resume "$ID" --root "$A"                          # run_moved (exit 4)
run run resume "$ID" --root "$B"
run run answer "$ID" confirm-1 yes --root "$B"
run run events "$ID" --root "$B" --after 12

# A snapshot signed by another run authority fails exactly like a tampered one.
OTHER="$WORK/other-authority"
run run start --agent examples/agents/researcher.json --root "$WORK/X" --authority-dir "$OTHER" --suspend-after-turns 2
run run export "$(first_run "$WORK/X")" --root "$WORK/X" --authority-dir "$OTHER" --out "$WORK/other.snapshot"
refuse run import "$WORK/other.snapshot" --root "$WORK/D"   # snapshot_claim_invalid (exit 3)
# Flip the last byte of a good snapshot (it is the claim's HMAC) and try that: the same refusal.
loopx run start --agent examples/agents/researcher.json --root "$WORK/Y" --suspend-after-turns 2 >/dev/null
loopx run export "$(first_run "$WORK/Y")" --root "$WORK/Y" --out "$WORK/good.snapshot" >/dev/null
node -e 'const fs = require("fs"); const b = fs.readFileSync(process.argv[1]); b[b.length - 1] ^= 1; fs.writeFileSync(process.argv[2], b)' "$WORK/good.snapshot" "$WORK/tampered.snapshot"
refuse run import "$WORK/tampered.snapshot" --root "$WORK/D"   # snapshot_claim_invalid (exit 3)

printf '\nruntime roots and snapshots are in %s\n' "$WORK"
