# Installs the build into WORK_DIR/prefix, builds examples/cpp against it and runs it on the cpu
# and nc-v2 targets; fails on any step. Run by CTest (tests/api/CMakeLists.txt).
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${err}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cpp -B ${WORK_DIR}/consumer -G Ninja -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
foreach(target cpu nc-v2)
  step(${WORK_DIR}/consumer/classify ${SOURCE_DIR}/examples/small_cnn.onnx ${SOURCE_DIR}/examples/small_cnn_input.npy
       ${SOURCE_DIR}/examples/small_cnn_expected.npy ${target})
endforeach()
# The installed CLI runs too.
step(${WORK_DIR}/prefix/bin/tessel info ${SOURCE_DIR}/examples/small_cnn.onnx)
