#!/usr/bin/env bash
# Static checks of the deployment files, run by CI and test/deploy/units.test.ts:
#   - every systemd unit in deploy/systemd passes `systemd-analyze verify`
#     with no output at all (verify exits 0 on unknown keys, only warning);
#   - every .nix file in the repository parses (`nix-instantiate --parse`),
#     except the vendored copy of nixpkgs' lib (test/fixtures/nixpkgs-lib).
# Needs Debian's `systemd` and `nix-bin` packages. Exit 0: all good.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
status=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

for tool in systemd-analyze nix-instantiate; do
  command -v "$tool" >/dev/null || { echo "check.sh: $tool not found (apt-get install -y systemd nix-bin)" >&2; exit 127; }
done

# verify also checks that each Exec*= binary exists. llama-server is built by
# the operator and rarely present where this runs, so when it is missing the
# unit is verified as a copy whose ExecStart names a stand-in executable;
# everything else in the unit is checked as written.
llama_bin=/usr/local/bin/llama-server
stub="$tmp/bin/llama-server"
mkdir -p "$tmp/bin" "$tmp/units"
printf '#!/bin/sh\nexit 0\n' >"$stub"
chmod +x "$stub"

for unit in "$root"/deploy/systemd/*.service "$root"/deploy/systemd/*.target; do
  name="$(basename "$unit")"
  target="$unit"
  if grep -q "^ExecStart=$llama_bin" "$unit" && [ ! -x "$llama_bin" ]; then
    target="$tmp/units/$name"
    sed "s#^ExecStart=$llama_bin#ExecStart=$stub#" "$unit" >"$target"
    # Sibling units must be found by name for Wants=/After= checks.
    for sib in "$root"/deploy/systemd/*; do
      [ "$(basename "$sib")" = "$name" ] || cp "$sib" "$tmp/units/"
    done
  fi
  out="$(systemd-analyze verify --man=no "$target" 2>&1)" || { status=1; }
  if [ -n "$out" ]; then
    echo "FAIL $name:" >&2
    echo "$out" | sed 's/^/  /' >&2
    status=1
  else
    echo "ok   $name"
  fi
done

while IFS= read -r -d '' nix; do
  rel="${nix#"$root"/}"
  if out="$(nix-instantiate --parse "$nix" 2>&1 >/dev/null)"; then
    echo "ok   $rel"
  else
    echo "FAIL $rel:" >&2
    echo "$out" | sed 's/^/  /' >&2
    status=1
  fi
done < <(find "$root" -name '*.nix' -not -path '*/node_modules/*' -not -path '*/.git/*' -not -path '*/test/fixtures/nixpkgs-lib/*' -print0)

exit "$status"
