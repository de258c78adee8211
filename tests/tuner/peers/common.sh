# Sourced by check_*.sh: strict mode, a scratch folder removed on exit ($work), and the export
# checks' table written there in every format (export_peer_tables.cpp).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -I"$root/include" "$here/export_peer_tables.cpp" -o "$work/tables"
"$work/tables" "$work"
