import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class TuttiTestPackage(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        # Built under the repository's build/ (ignored, where CMake builds go too), not inside
        # test_package/: `conan create .` must leave no untracked folder in the tree.
        cmake_layout(self, build_folder=os.path.join("..", "build", "conan-test-package"))

    def generate(self):
        CMakeDeps(self).generate()
        toolchain = CMakeToolchain(self)
        toolchain.user_presets_path = False  # no CMakeUserPresets.json in test_package/ either
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "tutti_test_package"), env="conanrun")
