# Writes build_info.cc from build_info.cc.in at build time (a custom target
# runs it on every build): the git commit changes without CMake running
# again. configure_file rewrites the file only when its text changes, so an
# unchanged commit recompiles nothing.
#
# -D inputs: IN, OUT, SOURCE_DIR, GIT (may be empty), EBZIP_VERSION,
# EBZIP_CUDA_BOOL (true/false), EBZIP_BUILD_TYPE.
set(EBZIP_COMMIT unknown)
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT failed AND commit)
    set(EBZIP_COMMIT "${commit}")
    # Tracked files changed since the commit: the binary is not that commit.
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" diff --quiet HEAD --
                    RESULT_VARIABLE dirty OUTPUT_QUIET ERROR_QUIET)
    if(dirty EQUAL 1)
      string(APPEND EBZIP_COMMIT "-dirty")
    endif()
  endif()
endif()
if(NOT EBZIP_BUILD_TYPE)
  set(EBZIP_BUILD_TYPE none)
endif()
configure_file("${IN}" "${OUT}" @ONLY)
