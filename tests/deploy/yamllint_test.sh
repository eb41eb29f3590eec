#!/usr/bin/env bash
# Every YAML file of the deployment passes yamllint (config: .yamllint).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v yamllint >/dev/null; then
  echo "SKIP: yamllint not installed (scripts/install_deps.sh installs it)"
  exit 77
fi
mapfile -t files < <(git ls-files -co --exclude-standard -- \
  'deploy/*.yml' 'deploy/*.yaml' 'docker-compose*.yml' '.yamllint' | sort -u)
if [[ ${#files[@]} -lt 5 ]]; then
  echo "FAIL: found only ${#files[@]} YAML files under deploy/ (${files[*]})"
  exit 1
fi
yamllint --strict -c .yamllint "${files[@]}"
echo "ok: ${#files[@]} YAML files pass yamllint"
