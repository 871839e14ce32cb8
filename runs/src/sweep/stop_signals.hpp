// How a sweep stops on SIGTERM, SIGINT and SIGUSR1 (docs/cli.md, "sweep"; sweep.hpp says
// what each means). The handlers only set flags, except that SIGTERM and SIGINT end the
// process at once (write(2) of a prepared note, then _exit) while the process is
// "abandonable", which it is everywhere in the sweep except while rank 0 writes the file.
#pragma once

#include <string>

namespace interplace::runs::sweep {

enum class StopRequest { none = 0, finish_current = 1, now = 2 };

// Installs the handlers for its lifetime (one at a time) and restores the previous ones.
class StopSignals {
 public:
  explicit StopSignals(int exit_status);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static StopRequest requested();

  // What the process prints (to stderr) when SIGTERM/SIGINT end it: "" for silence (the
  // ranks besides 0). Not async-signal-safe: call it only while not abandonable.
  void set_note(const std::string& note);
  // Whether SIGTERM/SIGINT may end the process right now. Turning it on leaves at once
  // when one arrived while it was off.
  void set_abandonable(bool abandonable);
  // Ends the process as the handler would (the note, then the exit status).
  [[noreturn]] void leave_now() const;
};

// RAII: not abandonable for its lifetime (rank 0's writes to the result file).
class Unabandonable {
 public:
  explicit Unabandonable(StopSignals& signals) : signals_(signals) {
    signals_.set_abandonable(false);
  }
  ~Unabandonable() { signals_.set_abandonable(true); }
  Unabandonable(const Unabandonable&) = delete;
  Unabandonable& operator=(const Unabandonable&) = delete;

 private:
  StopSignals& signals_;
};

}  // namespace interplace::runs::sweep
