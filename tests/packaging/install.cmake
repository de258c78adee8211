# cmake -DBUILD_DIR=<tutti build> -DPREFIX=<scratch prefix> [-DCONFIG=<cfg>] -P install.cmake
# Installs tutti's development component (headers + CMake package) into an emptied PREFIX.
file(REMOVE_RECURSE "${PREFIX}")
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
          --component tutti_development ${config_args}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
foreach(file include/tutti/tutti.hpp include/tutti/version.hpp
             share/cmake/tutti/tuttiConfig.cmake share/cmake/tutti/tuttiConfigVersion.cmake
             share/cmake/tutti/tutti-targets.cmake share/cmake/tutti/tuttiOptionalDeps.cmake)
  if(NOT EXISTS "${PREFIX}/${file}")
    message(FATAL_ERROR "the install lacks ${file}")
  endif()
endforeach()
