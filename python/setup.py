"""Builds reduction_server's extension (_core) for pip.

The extension links the project's C++ client library, so it is built by the project's
CMake, not by setuptools:

  RS_BUILD_DIR=/path/to/build pip install ./python --no-build-isolation
      takes <build>/python/reduction_server/_core*.so from an existing build (configured
      for this interpreter: -DPython3_EXECUTABLE=...); nothing is compiled.
  pip install ./python --no-build-isolation
      configures the repository (the folder above this one) in a build folder of its own,
      python/build/cmake (RS_CMAKE_ARGS adds options), and builds only the target rs_python.
      Needs the packages of scripts/lib/deps.sh's build list, python3-dev and
      python3-pybind11; a first build takes minutes.

Everything is local: nothing is downloaded (hence --no-build-isolation, which uses this
interpreter's setuptools instead of fetching one).
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _built_extension(build_dir):
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = glob.glob(os.path.join(build_dir, "python", "reduction_server", "_core*.so"))
    mine = [f for f in found if f.endswith(suffix)]
    if not mine:
        raise SystemExit("reduction_server: no _core%s in %s/python/reduction_server (found: %s); build the "
                         "target rs_python there, configured with -DPython3_EXECUTABLE=%s"
                         % (suffix, build_dir, ", ".join(map(os.path.basename, found)) or "nothing", sys.executable))
    return mine[0]


def _cmake_build():
    build_dir = os.path.join(HERE, "build", "cmake")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        args = ["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DRS_BUILD_TESTS=OFF",
                "-DRS_BUILD_BENCH=OFF", "-DRS_BUILD_GPU=OFF", "-DPython3_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        subprocess.check_call(args + shlex.split(os.environ.get("RS_CMAKE_ARGS", "")))
    subprocess.check_call(["cmake", "--build", build_dir, "--target", "rs_python", "--parallel",
                           str(os.cpu_count() or 1)])
    return _built_extension(build_dir)


class CMakeBuildExt(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("RS_BUILD_DIR")
        built = _built_extension(os.path.abspath(build_dir)) if build_dir else _cmake_build()
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)
        os.chmod(target, 0o755)


setup(ext_modules=[Extension("reduction_server._core", sources=[])], cmdclass={"build_ext": CMakeBuildExt})
