#include "stop_signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include "interplace/kernels/error.hpp"

namespace interplace::runs::sweep {
namespace {

constexpr std::array<int, 3> kSignals = {SIGTERM, SIGINT, SIGUSR1};

volatile sig_atomic_t g_request = 0;      // StopRequest
volatile sig_atomic_t g_signal = 0;       // the last stop signal
volatile sig_atomic_t g_abandonable = 0;  // SIGTERM/SIGINT may _exit now
volatile sig_atomic_t g_exit_status = 1;
std::atomic<bool> g_installed{false};
// The note: written once before the handlers can read it, replaced only while not
// abandonable (so the handler never reads it half-written).
char g_note[4096];
volatile sig_atomic_t g_note_size = 0;
struct sigaction g_previous[kSignals.size()];

void write_all(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, size);
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Async-signal-safe: the note with the signal's name in front, then _exit.
[[noreturn]] void leave(int signal) {
  if (g_note_size > 0) {
    const char* name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    write_all("\ninterplace sweep: ", 19);
    write_all(name, std::strlen(name));
    write_all(g_note, static_cast<size_t>(g_note_size));
  }
  ::_exit(g_exit_status);
}

extern "C" void on_stop_signal(int signal) {
  g_signal = signal;
  if (signal == SIGUSR1) {
    if (g_request < static_cast<int>(StopRequest::finish_current)) {
      g_request = static_cast<int>(StopRequest::finish_current);
    }
    return;
  }
  g_request = static_cast<int>(StopRequest::now);
  if (g_abandonable) leave(signal);
}

}  // namespace

StopSignals::StopSignals(int exit_status) {
  if (g_installed.exchange(true)) throw_runtime("StopSignals: installed twice");
  g_request = 0;
  g_signal = 0;
  g_abandonable = 0;
  g_note_size = 0;
  g_exit_status = exit_status;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (const int s : kSignals) sigaddset(&action.sa_mask, s);  // one handler at a time
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &g_previous[i]);
}

StopSignals::~StopSignals() {
  g_abandonable = 0;
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  g_installed = false;
}

StopRequest StopSignals::requested() {
  return static_cast<StopRequest>(g_request);
}

void StopSignals::set_note(const std::string& note) {
  const bool was = g_abandonable != 0;
  g_abandonable = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const size_t size = std::min(note.size(), sizeof g_note);
  std::memcpy(g_note, note.data(), size);
  g_note_size = static_cast<sig_atomic_t>(size);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  set_abandonable(was);
}

void StopSignals::set_abandonable(bool abandonable) {
  g_abandonable = abandonable ? 1 : 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (abandonable && g_request == static_cast<int>(StopRequest::now)) leave_now();
}

void StopSignals::leave_now() const {
  leave(g_signal);
}

}  // namespace interplace::runs::sweep
