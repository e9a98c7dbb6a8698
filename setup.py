"""setuptools drives CMake: one build (CMakeLists.txt) for the core, the tests and _core."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # A fixed build folder keeps re-installs incremental (build_temp is new each time).
        build_dir = ROOT / "build" / f"py{sys.version_info.major}{sys.version_info.minor}"
        config = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCAPPLAN_BUILD_TESTS=OFF", "-DCAPPLAN_BUILD_BENCH=OFF",
            f"-DCMAKE_INTERPROCEDURAL_OPTIMIZATION={os.environ.get('CAPPLAN_LTO', 'OFF')}",
            f"-DCAPPLAN_ENABLE_CUDA={os.environ.get('CAPPLAN_ENABLE_CUDA', 'ON')}",
        ]
        try:
            import pybind11
            config.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass  # Debian's pybind11-dev provides the CMake package config
        subprocess.run(config, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_core", "-j", str(os.cpu_count() or 2)],
                       check=True)
        built = next(build_dir.glob("_core*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


class BuildPyWithCatalog(build_py):
    """Ships the catalog (models/) inside the package so an installed wheel finds it."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "capplan" / "models"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(ROOT / "models", target)


setup(ext_modules=[CMakeExtension("capplan._core")],
      cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithCatalog})
