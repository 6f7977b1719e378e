// A test binary that dies of a signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
// SIGABRT) first writes to stderr the test it was running and the stack
// (function names where the binary exports them, else library + offset, which
// addr2line resolves), then dies of the same signal. Machines without a
// debugger (the device check's) then still say where.
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstring>

namespace {

void WriteErr(const char* s) { (void)!::write(STDERR_FILENO, s, std::strlen(s)); }

void OnFatalSignal(int sig) {
  WriteErr("\n*** crash_trace: signal ");
  WriteErr(::strsignal(sig));
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test != nullptr) {
    WriteErr(" in test ");
    WriteErr(test->test_suite_name());
    WriteErr(".");
    WriteErr(test->name());
  }
  WriteErr("; stack:\n");
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

const bool kInstalled = [] {
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // a sanitizer's own
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
  return true;
}();

TEST(CrashTrace, AFatalSignalNamesTheTestAndTheStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  struct sigaction now {};
  ::sigaction(SIGSEGV, nullptr, &now);
  if (now.sa_handler != OnFatalSignal) GTEST_SKIP() << "another handler owns SIGSEGV here (a sanitizer build)";
  EXPECT_DEATH(::raise(SIGSEGV), "crash_trace: signal .* in test CrashTrace.AFatalSignalNamesTheTestAndTheStack; stack:");
}

}  // namespace
