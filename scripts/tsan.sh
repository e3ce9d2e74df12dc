#!/usr/bin/env bash
# ThreadSanitizer over the runtime and transport tests: scripts/sanitize.sh --thread (see there).
exec bash "$(dirname "${BASH_SOURCE[0]}")/sanitize.sh" --thread "$@"
