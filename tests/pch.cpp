// The translation unit that builds the tests' precompiled header (Catch2 and tenfold.hpp, parsed once
// instead of once per test program: tests/CMakeLists.txt).
