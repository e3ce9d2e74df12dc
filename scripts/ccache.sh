#!/usr/bin/env bash
# Sourced by the build scripts: sets `launcher` to the CMake flag that compiles through ccache when
# it is installed (empty otherwise) and `ccache_env` to the environment it runs in. Paths under the
# checkout are hashed relative to it and the working folder is not hashed, so a clone in another
# folder (CI's fresh clone, a worktree) reuses what an earlier build compiled.
launcher=()
ccache_env=()
if command -v ccache >/dev/null; then
  ccache_env=("CCACHE_BASEDIR=$root" CCACHE_NOHASHDIR=true)
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;${ccache_env[0]};${ccache_env[1]};ccache")
fi
