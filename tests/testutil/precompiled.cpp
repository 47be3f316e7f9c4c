// The target that compiles tests/testutil/precompiled.h once (tests/CMakeLists.txt, IDEM_PCH).
