"""Conan 2 recipe for tutti, a header-only C++20 library.

Boost (>= 1.74, headers) and Threads come from the system, not from Conan: the recipe requires
nothing. The package is what `cmake --install` puts in a prefix; Conan consumers get tutti::tutti
from CMakeDeps, completed by cmake/tuttiConan.cmake (Boost, Threads, C++20, optional backends).

    conan create . -s compiler.cppstd=20 --build=missing
"""
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class TuttiConan(ConanFile):
    name = "tutti"
    description = "Header-only C++20 collectives for data-parallel training"
    topics = ("collectives", "allreduce", "distributed-training", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "cmake/*", "CMakeLists.txt", "LICENSE*"
    no_copy_source = True

    def set_version(self):
        # One source of truth: project(tutti VERSION x.y.z) in CMakeLists.txt.
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        self.version = re.search(r"project\(tutti\s+VERSION\s+(\d+\.\d+\.\d+)", cmakelists).group(1)

    def layout(self):
        cmake_layout(self)

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TUTTI_BUILD_TESTS"] = False
        tc.cache_variables["TUTTI_BUILD_EXAMPLES"] = False
        tc.cache_variables["TUTTI_BUILD_BENCH"] = False
        tc.cache_variables["TUTTI_BUILD_TOOLS"] = False  # a header-library package carries no binaries
        tc.generate()

    def build(self):
        CMake(self).configure()  # nothing to compile; configure checks Boost and prepares install

    def package(self):
        CMake(self).install()
        copy(self, "tuttiConan.cmake", src=os.path.join(self.source_folder, "cmake"),
             dst=os.path.join(self.package_folder, "share", "cmake", "tutti"))
        copy(self, "LICENSE*", src=self.source_folder,
             dst=os.path.join(self.package_folder, "licenses"))

    def package_id(self):
        self.info.clear()

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "tutti")
        self.cpp_info.set_property("cmake_target_name", "tutti::tutti")
        self.cpp_info.set_property("cmake_build_modules",
                                   [os.path.join("share", "cmake", "tutti", "tuttiConan.cmake")])
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs = ["pthread"]
