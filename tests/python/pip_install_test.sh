#!/usr/bin/env bash
# `pip install ./python` the way a user does it offline, into a fresh virtual
# environment that sees the system's packages (Debian's python3-torch), with
# the extension taken from this build (RS_BUILD_DIR; setup.py), then the DDP
# hook test from that environment: reduction_server must come from the
# venv's site-packages, not from the build folder.
#
#   pip_install_test.sh SOURCE_DIR BUILD_DIR PYTHON SCRATCH
set -euo pipefail
src=$1 build=$2 python=$3 scratch=$4

"$python" -c 'import venv, pip' 2>/dev/null || { echo "SKIPPED: $python has no venv or pip (python3-venv, python3-pip)"; exit 77; }
rm -rf "$scratch"
mkdir -p "$scratch"
"$python" -m venv --system-site-packages "$scratch/venv"
# A copy of the package's folder, so pip's in-tree build leaves nothing in the source tree.
cp -r "$src/python" "$scratch/pkg"
RS_BUILD_DIR=$build "$scratch/venv/bin/pip" install --no-build-isolation --no-index --quiet "$scratch/pkg"
where=$(cd "$scratch" && "$scratch/venv/bin/python" -c 'import reduction_server as rs; print(rs._core.__file__)')
case $where in
  "$scratch"/venv/lib/*/site-packages/reduction_server/_core*.so) echo "installed: $where" ;;
  *) echo "FAIL: reduction_server imported from $where, not the venv"; exit 1 ;;
esac
exec "$scratch/venv/bin/python" "$src/tests/python/ddp_hook_test.py" --reducerd "$build/server/reducerd" \
  --python "$scratch/venv/bin/python" --scenarios train --logdir "$scratch/logs"
