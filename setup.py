"""setup.py: what pyproject.toml cannot say: the wheel carries the
library make built (build/libphobos.so.0) inside the package, where
phobos looks first, and is then a wheel for this platform. Without a built
library the wheel is the package alone, which finds an installed one
(make install). setuptools' own work (its build folder, the egg-info)
goes under build/pip, not among make's outputs nor into python/."""

import os

from setuptools import setup
from setuptools.command.build import build
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(ROOT, "build", "libphobos.so.0")


class BuildUnderBuildPip(build):
    def initialize_options(self):
        super().initialize_options()
        self.build_base = os.path.join("build", "pip")


class EggInfoUnderBuildPip(egg_info):
    def initialize_options(self):
        super().initialize_options()
        self.egg_base = os.path.join("build", "pip")
        os.makedirs(self.egg_base, exist_ok=True)


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if os.path.exists(LIBRARY):
            self.copy_file(LIBRARY, os.path.join(self.build_lib, "phobos", "libphobos.so.0"))
        else:
            print(f"phobos: {LIBRARY} is not built (make): the wheel holds the package alone, "
                  "which looks for an installed library (docs/python.md)")


class WithLibrary(Distribution):
    def has_ext_modules(self):
        return os.path.exists(LIBRARY)   # a wheel for this platform when it carries the library


setup(distclass=WithLibrary, cmdclass={"build": BuildUnderBuildPip, "egg_info": EggInfoUnderBuildPip,
                                          "build_py": BuildPyWithLibrary})
