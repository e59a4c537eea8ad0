#!/usr/bin/env bash
# `cargo deny check` (advisories, licenses, bans, sources; deny.toml) against the advisory
# database the project keeps in deny/advisory-db, never fetched: it is staged where cargo-deny
# looks for the database of deny.toml's URL, dated as deny/advisory-db/DATE says, so that
# `maximum-db-staleness` measures the database's own age.
# Usage: deny/check.sh PATH_TO_CARGO_DENY
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cargo_deny="$1"
cd "$repo"
db_date="$(head -n 1 deny/advisory-db/DATE)"
db_commit="$(sed -n 2p deny/advisory-db/DATE)"
# cargo-deny's directory for https://github.com/rustsec/advisory-db under db-path.
stage=.cache/advisory-dbs/advisory-db-3157b0e258782691
rm -rf "$stage"
mkdir -p "$stage/.git"
cp -R deny/advisory-db/crates "$stage/"
touch -d "$db_date" "$stage/.git/FETCH_HEAD"
advisories=$(find "$stage/crates" -name '*.md' | wc -l)
newest=$(grep -rh '^date = ' "$stage/crates" | sort | tail -n 1 | cut -d'"' -f2)
age=$(( ($(date +%s) - $(date -d "$db_date" +%s)) / 86400 ))
# Crates added since the last refresh have no entries yet: named, not refused.
uncovered=$(comm -13 deny/advisory-db/CRATES <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.lock | sort -u) | tr '\n' ' ')
if [ -n "$uncovered" ]; then
    echo "warning: not in the advisory database's last refresh (deny/README.md): $uncovered"
fi
echo "advisory database of $db_date (${db_commit:0:8}, $age days old): $advisories advisories, newest published $newest"
# cargo-deny reads `cargo metadata` offline, which needs every crate of Cargo.lock, also those
# only other platforms build (a fresh machine's builds fetched none of them): fetch them first.
"${CARGO:-cargo}" fetch --locked --quiet
exec "$cargo_deny" --offline --color never check --hide-inclusion-graph
