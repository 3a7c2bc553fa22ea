// The C++ wrapper's callback boundary (bindings/cpp/loader.hpp): what a callback throws is
// caught in the trampoline, never passed through the C library, and rethrown by the thread's
// outermost wrapper call once the C call has completed. Nested calls lose nothing, a release
// that throws costs no other release, threads keep their exceptions apart, a Loader may be
// freed inside its own callback, a thread may end inside one, and a read whose `issue` threw
// is let go of (an own failure the retry rules recover), never left outstanding. And without
// the wrapper: a C++ exception thrown by a callback registered through the C API itself
// passes through the library to the caller of the C function that delivered it
// (include/loader.h, CALLBACKS), and a read whose `issue` threw is let go of on the way.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../bindings/cpp/loader.hpp"

static std::atomic<int> passed, failed;
#define EXPECT(c)                                                                     \
    do {                                                                              \
        if (c) {                                                                      \
            passed++;                                                                 \
        } else {                                                                      \
            failed++;                                                                 \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c);     \
        }                                                                             \
    } while (0)

// A host exception type of its own, to check the type survives the trip.
struct HostError {
    int value;
};

static std::string be64(uint64_t v) {
    std::string c(8, '\0');
    for (int i = 7; i >= 0; i--, v >>= 8) c[i] = char(v & 0xff);
    return c;
}
static uint64_t from_be64(const std::string &c) {
    uint64_t v = 0;
    for (char b : c) v = (v << 8) | uint8_t(b);
    return v;
}

// Answers `r` from a source of `len` items in its direction: forward, the items after the
// cursor; backward, those before it, with the cursor just before them next (empty at the
// source's start, which `end_of_source` then reports).
static loader_answer settle_from(loader::Loader &l, const loader::Read &r, loader::Acquisition acq, uint64_t len) {
    uint64_t at = from_be64(r.cursor);
    bool back = r.direction == LOADER_DIRECTION_BACKWARD;
    uint64_t to = back ? std::min(at, len) : std::min<uint64_t>(at + r.limit, len);
    uint64_t from = back ? (to > r.limit ? to - r.limit : 0) : at;
    std::string next = back ? (from == 0 ? std::string() : be64(from)) : be64(to);
    return l.settle(r.read_id, acq, uint32_t(to - from), next, back ? from == 0 : to == len);
}

static loader::Config small() {
    loader::Config cfg;
    cfg.page_size = 4;
    cfg.prefetch_distance = 0;
    return cfg;
}

// A host over a source of `len` items that queues reads and records releases.
struct Host {
    uint64_t len = 40;
    std::deque<loader::Read> reads;
    std::map<loader::Acquisition, int> released;
    loader::Acquisition next_acq = 1;
    int changes = 0;

    void answer(loader::Loader &l, const loader::Read &r) { settle_from(l, r, next_acq++, len); }
    bool released_exactly_once() const {
        if (released.size() != next_acq - 1) return false;
        for (auto &kv : released)
            if (kv.second != 1) return false;
        return true;
    }
};

// Answers every queued read; when none is left and the loader is not quiescent, ticks at its
// backoff deadline (the retry's read comes through `issue`), or, with the automatic retries
// spent, retries as the loop at loader_next_deadline in loader.h does. Returns whether the
// loader became quiescent: `false` when it is stuck (no deadline, no failure to retry: a read
// outstanding that nobody will answer) or after `rounds`.
static bool drive_by_deadline(loader::Loader &l, Host &h, int rounds = 1000) {
    for (int i = 0; i < rounds; i++) {
        if (!h.reads.empty()) {
            loader::Read r = h.reads.front();
            h.reads.pop_front();
            h.answer(l, r);
            continue;
        }
        loader_snapshot s = l.state();
        if (s.quiescent) return true;
        if (std::optional<std::uint64_t> at = l.next_deadline()) {
            l.tick(*at);
        } else if (s.failure != LOADER_FAILURE_OWN || !l.retry()) {
            return false;
        }
    }
    return false;
}

// The exception reaches the caller with its own type, after the whole call; the read whose
// `issue` threw was let go of before that (an own failure, nothing outstanding), and the
// backoff retry recovers it. The host's answer to the read it queued anyway is stale.
static void an_issue_that_throws_is_rethrown_after_the_call() {
    Host h;
    bool thrown = false;
    loader::Loader l({[&](const loader::Read &r) {
                          h.reads.push_back(r);
                          if (!thrown) {
                              thrown = true;
                              throw HostError{7};
                          }
                      },
                      [&](loader::Acquisition a) { h.released[a]++; }, [&] { h.changes++; }},
                     small());
    l.tick(0);
    int caught = 0;
    try {
        l.set_window(0, 10);
    } catch (const HostError &e) {
        caught = e.value;
    }
    EXPECT(caught == 7);
    EXPECT(loader::suppressed().empty());
    EXPECT(h.reads.size() == 1 && h.changes > 0);
    loader_snapshot s = l.state();
    EXPECT(s.outstanding_reads == 0 && s.failure == LOADER_FAILURE_OWN);
    EXPECT(l.stats().failed_own == 1);
    EXPECT(l.next_deadline().has_value());
    // The host had queued the read before it threw, and answers it: a late answer, released
    // at once.
    loader::Read late = h.reads.front();
    h.reads.pop_front();
    auto released = h.released.size();
    EXPECT(settle_from(l, late, h.next_acq++, h.len) == LOADER_ANSWER_STALE);
    EXPECT(h.released.size() == released + 1);
    // Nothing is left over: the next calls throw nothing, and the backoff retry finishes.
    EXPECT(drive_by_deadline(l, h));
    EXPECT(l.state().covered_end == 12);
    l.close();
    EXPECT(h.released_exactly_once());
}

// A long traversal whose `issue` throws now and then (every 7th read), driven by the deadline
// loop alone: every move completes and the loader ends quiescent; nothing is stuck
// outstanding.
static void a_traversal_with_throwing_issues_completes_by_the_deadline_alone() {
    Host h;
    h.len = 400;
    int issued = 0, thrown = 0;
    loader::Loader l({[&](const loader::Read &r) {
                          if (++issued % 7 == 0) {
                              thrown++;
                              throw std::runtime_error("the host's queue is full");
                          }
                          h.reads.push_back(r);
                      },
                      [&](loader::Acquisition a) { h.released[a]++; }},
                     small());
    l.tick(0);
    int caught = 0;
    for (std::uint64_t start = 0; start + 20 <= h.len; start += 20) {
        try {
            l.set_window(start, 20);
        } catch (const std::runtime_error &) {
            caught++;
        }
        bool quiet = false;
        for (;;) {
            try {
                quiet = drive_by_deadline(l, h);
                break;
            } catch (const std::runtime_error &) {
                caught++;  // an issue threw during a settle or a tick
            }
        }
        EXPECT(quiet);
        loader_snapshot s = l.state();
        EXPECT(s.covered_start <= start && s.covered_end >= start + 20);
        if (!quiet) break;
    }
    EXPECT(thrown > 5 && caught == thrown);
    EXPECT(l.stats().failed_own == std::uint64_t(thrown));
    l.close();
    EXPECT(h.released_exactly_once());
}

// Anything thrown comes back, not only std::exception.
static void a_non_standard_exception_comes_back() {
    loader::Loader l({[](const loader::Read &) { throw 42; }, [](loader::Acquisition) {}}, small());
    int got = 0;
    try {
        l.set_window(0, 4);
    } catch (int v) {
        got = v;
    }
    EXPECT(got == 42);
}

// Release throws every time: every acquisition is still released, during a settle (a chain
// commit retires the old pages), close() and the destructor.
static void releases_that_throw_miss_no_release() {
    for (int how = 0; how < 3; how++) {
        Host h;
        bool throwing = false;
        {
            loader::Loader l({[&](const loader::Read &r) { h.reads.push_back(r); },
                              [&](loader::Acquisition a) {
                                  h.released[a]++;
                                  if (throwing) throw std::runtime_error("release " + std::to_string(a));
                              }},
                             small());
            l.set_window(0, 12);
            while (!h.reads.empty()) {
                loader::Read r = h.reads.front();
                h.reads.pop_front();
                h.answer(l, r);
            }
            EXPECT(l.state().pages == 3);
            throwing = true;
            if (how == 0) {
                // The chain's last settle commits it and retires the three old pages.
                l.invalidate();
                int thrown = 0;
                while (!h.reads.empty()) {
                    loader::Read r = h.reads.front();
                    h.reads.pop_front();
                    try {
                        h.answer(l, r);
                    } catch (const std::runtime_error &e) {
                        thrown += 1 + int(loader::suppressed().size());
                        EXPECT(std::string(e.what()) == "release 1");
                    }
                }
                EXPECT(thrown == 3 && h.released.size() == 3);
                loader_snapshot s = l.state();
                EXPECT(s.released == 3 && s.accepted == 6 && s.pages == 3);
                throwing = false;
            } else if (how == 1) {
                std::string first;
                try {
                    l.close();
                } catch (const std::runtime_error &e) {
                    first = e.what();
                }
                EXPECT(first == "release 1");
                EXPECT(loader::suppressed().size() == 2);
                EXPECT(h.released.size() == 3);
            }
            // how == 2: the destructor, which cannot throw.
        }
        EXPECT(h.released_exactly_once());
        EXPECT(how != 2 || loader::suppressed().empty());
    }
}

// A pinned view defers releases; when it goes, they are made even if each one throws:
// release() rethrows the first (the rest in suppressed()), the destructor drops them.
static void deferred_releases_that_throw_miss_no_release() {
    for (int use_release = 0; use_release < 2; use_release++) {
        Host h;
        loader::PinnedView pinned;
        {
            loader::Loader l({[&](const loader::Read &r) { h.reads.push_back(r); },
                              [&](loader::Acquisition a) {
                                  h.released[a]++;
                                  throw HostError{int(a)};
                              }},
                             small());
            l.set_window(0, 12);
            while (!h.reads.empty()) {
                loader::Read r = h.reads.front();
                h.reads.pop_front();
                h.answer(l, r);
            }
            pinned = l.pin_view();
            EXPECT(pinned.pages().size() == 3);
        }  // the free defers all three releases: nothing thrown, nothing released
        EXPECT(h.released.empty());
        if (use_release) {
            int first = 0;
            try {
                pinned.release();
            } catch (const HostError &e) {
                first = e.value;
            }
            EXPECT(first == 1 && loader::suppressed().size() == 2);
        } else {
            pinned = loader::PinnedView();  // the old one is reset: it cannot throw
        }
        EXPECT(h.released_exactly_once() && h.released.size() == 3);
    }
}

// A synchronous host: the issue callback settles inside (a nested call), then throws for
// every even read. The nested calls return normally; the outermost call rethrows the first
// exception, and the others are in suppressed(): none is lost, and every read was answered.
static void nested_calls_lose_no_exception() {
    Host h;
    loader::Loader *self = nullptr;
    int nested_threw = 0, thrown = 0;
    loader::Loader l({[&](const loader::Read &r) {
                          try {
                              h.answer(*self, r);
                          } catch (...) {
                              nested_threw++;
                          }
                          if (r.read_id % 2 == 0) {
                              thrown++;
                              throw HostError{int(r.read_id)};
                          }
                      },
                      [&](loader::Acquisition a) { h.released[a]++; }},
                     small());
    self = &l;
    int first = -1;
    size_t others = 0;
    try {
        l.set_window(0, 40);
    } catch (const HostError &e) {
        first = e.value;
        others = loader::suppressed().size();
        for (const std::exception_ptr &p : loader::suppressed()) {
            try {
                std::rethrow_exception(p);
            } catch (const HostError &o) {
                EXPECT(o.value % 2 == 0 && o.value > first);
            }
        }
    }
    EXPECT(nested_threw == 0);
    EXPECT(thrown >= 2 && first >= 0 && first % 2 == 0 && int(others) + 1 == thrown);
    loader_snapshot s = l.state();
    EXPECT(s.covered_end == 40 && s.outstanding_reads == 0 && s.end_of_source);
    l.close();
    EXPECT(h.released_exactly_once());
}

// A nested call refused inside a callback throws Error into the callback; escaping it, the
// error comes back from the outer call marked in_callback(): the outer call itself succeeded.
static void an_error_escaping_a_callback_is_marked() {
    Host h;
    loader::Loader *self = nullptr;
    loader::Loader l({[&](const loader::Read &r) {
                          h.reads.push_back(r);
                          self->settle(r.read_id + 1000, 99, 1, be64(1), false);
                      },
                      [&](loader::Acquisition a) { h.released[a]++; }},
                     small());
    self = &l;
    bool marked = false;
    try {
        l.set_window(0, 4);
    } catch (const loader::Error &e) {
        marked = e.code() == LOADER_RESULT_UNKNOWN_READ && e.in_callback();
    }
    EXPECT(marked);
    // The error escaped `issue`: its read was let go of, as for any exception there.
    EXPECT(h.reads.size() == 1 && l.state().outstanding_reads == 0);
    EXPECT(l.state().failure == LOADER_FAILURE_OWN);
    // A refused call outside any callback is not marked.
    try {
        l.settle(12345, 1, 1, be64(1), false);
    } catch (const loader::Error &e) {
        EXPECT(!e.in_callback());
    }
}

// Closing (or destroying) a Loader from inside its own callback: the callback keeps running
// on live captures (ASan would see a use after free otherwise), every acquisition comes
// back, and what the free's callbacks threw waits for the outermost call (close) or is
// dropped (reset), without touching what the outer call's callbacks threw.
static void a_loader_freed_inside_its_own_callback() {
    for (int use_close = 0; use_close < 2; use_close++) {
        Host h;
        std::unique_ptr<loader::Loader> l;
        std::string marker = "still here";
        size_t seen = 0;
        int issues = 0;
        l = std::make_unique<loader::Loader>(
            loader::Callbacks{[&h, &l, marker, &seen, &issues, use_close](const loader::Read &r) {
                                  h.reads.push_back(r);
                                  if (++issues == 3) {
                                      if (use_close)
                                          l->close();
                                      else
                                          l->reset();
                                      seen = marker.size();  // the std::function's own capture
                                  }
                              },
                              [&](loader::Acquisition a) {
                                  h.released[a]++;
                                  throw HostError{int(a)};
                              }},
            small());
        l->set_window(0, 20);
        int caught = 0;
        size_t others = 0;
        for (int i = 0; i < 2; i++) {
            loader::Read r = h.reads.front();
            h.reads.pop_front();
            try {
                h.answer(*l, r);  // the second answer issues the third read, which frees
            } catch (const HostError &e) {
                caught = e.value;
                others = loader::suppressed().size();
            }
        }
        EXPECT(l->handle() == 0 && seen == std::string("still here").size());
        EXPECT(h.released_exactly_once() && h.released.size() == 2);
        // close(): rethrown by the outermost call (the settle), after the free; reset(): dropped.
        EXPECT(use_close ? caught == 1 && others == 1 : caught == 0);
    }
}

// Each thread gets back what its own callbacks threw: a thread whose callbacks never throw
// never sees an exception, and the other sees each of its own, first or suppressed.
static thread_local bool throw_here = false;
static thread_local int thrown_here = 0;

static void threads_keep_their_exceptions_apart() {
    std::mutex m;
    std::map<loader::Acquisition, int> released;
    std::atomic<loader::Acquisition> next_acq{1};
    const uint64_t len = 64;
    loader::Loader *self = nullptr;
    // A synchronous host: each read is answered inside its issue callback.
    loader::Loader l({[&](const loader::Read &r) {
                          settle_from(*self, r, next_acq++, len);
                      },
                      [&](loader::Acquisition a) {
                          std::lock_guard<std::mutex> g(m);
                          released[a]++;
                      },
                      [&] {
                          if (throw_here) {
                              thrown_here++;
                              throw HostError{1};
                          }
                      }},
                     small());
    self = &l;
    std::atomic<int> seen_by_quiet{0};
    int seen_by_thrower = 0, thrown_by_thrower = 0;
    std::thread quiet([&] {
        for (int i = 0; i < 300; i++) {
            try {
                if (i % 3 == 0) l.invalidate();
                l.set_window(uint64_t(i % 11), 5);
            } catch (...) {
                seen_by_quiet++;
            }
        }
    });
    std::thread thrower([&] {
        throw_here = true;
        for (int i = 0; i < 300; i++) {
            try {
                if (i % 2 == 0) l.invalidate();
                l.set_window(uint64_t(i % 13), 7);
            } catch (const HostError &) {
                seen_by_thrower += 1 + int(loader::suppressed().size());
            }
        }
        thrown_by_thrower = thrown_here;
    });
    quiet.join();
    thrower.join();
    EXPECT(seen_by_quiet == 0);
    EXPECT(thrown_by_thrower > 0 && seen_by_thrower == thrown_by_thrower);
    l.close();
    std::lock_guard<std::mutex> g(m);
    EXPECT(released.size() == next_acq - 1);
    bool once = true;
    for (auto &kv : released) once = once && kv.second == 1;
    EXPECT(once);
}

// A callback that ends its thread: the forced unwind is let through (not caught and kept,
// which would abort the process), and the loader stays usable from other threads.
static void a_thread_may_end_inside_a_callback() {
    Host h;
    std::mutex m;
    bool end_thread = true;
    loader::Loader l({[&](const loader::Read &r) {
                          {
                              std::lock_guard<std::mutex> g(m);
                              h.reads.push_back(r);
                          }
                          if (end_thread) pthread_exit(nullptr);
                      },
                      [&](loader::Acquisition a) { h.released[a]++; }},
                     small());
    pthread_t t;
    auto body = [](void *arg) -> void * {
        static_cast<loader::Loader *>(arg)->set_window(0, 10);
        return arg;  // not reached
    };
    EXPECT(pthread_create(&t, nullptr, body, &l) == 0);
    void *ret = &l;
    EXPECT(pthread_join(t, &ret) == 0);
    EXPECT(ret != &l);
    end_thread = false;
    // The read whose `issue` ended the thread was let go of (the library does it on the
    // unwind's way out): not outstanding, an own failure. The host's answer to it is late.
    EXPECT(h.reads.size() == 1 && l.state().outstanding_reads == 0);
    EXPECT(l.state().failure == LOADER_FAILURE_OWN);
    loader::Read late = h.reads.front();
    h.reads.pop_front();
    EXPECT(settle_from(l, late, h.next_acq++, h.len) == LOADER_ANSWER_STALE);
    EXPECT(drive_by_deadline(l, h));
    EXPECT(l.state().covered_end == 12);
    l.close();
    EXPECT(h.released_exactly_once());
}

// A host on the bare C API, whose callbacks are plain C++ functions: each records what it
// was given, then throws HostError{1: issue, 2: release, 3: changed, 4: cancel} while
// `throws_left` is positive.
struct RawHost {
    uint64_t len = 40;
    std::deque<loader::Read> reads;
    std::map<loader_acquisition, int> released;
    loader_acquisition next_acq = 1;
    int throws_left = 0;

    void maybe_throw(int what) {
        if (throws_left > 0) {
            throws_left--;
            throw HostError{what};
        }
    }
    static RawHost &of(void *ud) { return *static_cast<RawHost *>(ud); }
    static void on_issue(void *ud, const loader_read *r) {
        loader::Read read;
        read.read_id = r->read_id;
        read.kind = r->kind;
        if (r->cursor != nullptr) read.cursor.assign(reinterpret_cast<const char *>(r->cursor), r->cursor_len);
        read.limit = r->limit;
        read.direction = r->direction;
        if (r->until != nullptr) read.until.emplace(reinterpret_cast<const char *>(r->until), r->until_len);
        of(ud).reads.push_back(read);
        of(ud).maybe_throw(1);
    }
    static void on_release(void *ud, loader_acquisition a) {
        of(ud).released[a]++;
        of(ud).maybe_throw(2);
    }
    static void on_changed(void *ud) { of(ud).maybe_throw(3); }
    static void on_cancel(void *ud, uint64_t) { of(ud).maybe_throw(4); }
    // Runs inside the library's state change, which nothing may unwind out of: never throws.
    static int32_t on_compare(void *, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len) noexcept {
        int c = std::memcmp(a, b, std::min(a_len, b_len));
        return c != 0 ? (c < 0 ? -1 : 1) : a_len < b_len ? -1 : a_len > b_len ? 1 : 0;
    }

    // Answers `r` from the source through loader_settle, or loader_settle_counted with the
    // page's own first item as the count before it.
    loader_result answer(loader_handle h, const loader::Read &r, bool counted = false) {
        uint64_t at = from_be64(r.cursor);
        bool back = r.direction == LOADER_DIRECTION_BACKWARD;
        uint64_t to = back ? std::min(at, len) : std::min<uint64_t>(at + r.limit, len);
        if (r.until && !back) to = std::max(at, std::min(to, from_be64(*r.until)));
        uint64_t from = back ? (to > r.limit ? to - r.limit : 0) : at;
        std::string next = back ? (from == 0 ? std::string() : be64(from)) : be64(to);
        const auto *c = next.empty() ? nullptr : reinterpret_cast<const uint8_t *>(next.data());
        bool end = back ? from == 0 : to == len;
        loader_acquisition a = next_acq++;
        return counted ? loader_settle_counted(h, r.read_id, a, uint32_t(to - from), c, next.size(), end, from, nullptr)
                       : loader_settle(h, r.read_id, a, uint32_t(to - from), c, next.size(), end, nullptr);
    }
    // Answers every queued read, throwing nothing.
    void answer_all(loader_handle h) {
        while (!reads.empty()) {
            loader::Read r = reads.front();
            reads.pop_front();
            EXPECT(answer(h, r) == LOADER_RESULT_OK);
        }
    }
};

// Makes `call` with the next callback armed to throw; returns the HostError's value that came
// out of it (0: none). Then, from another thread (no lock stays held), makes the callbacks
// the throw left queued on this thread, by the next call, which throws nothing.
static int raw_throw_through(RawHost &host, loader_handle h, const std::function<loader_result()> &call) {
    host.throws_left = 1;
    int caught = 0;
    try {
        (void)call();
    } catch (const HostError &e) {
        caught = e.value;
    }
    host.throws_left = 0;
    std::thread([&] { EXPECT(loader_tick(h, 0) == LOADER_RESULT_OK); }).join();
    return caught;
}

// Every C function that delivers callbacks lets a callback's C++ exception through to its
// caller, with its own type; the loader stays consistent and usable, and every acquisition
// is released at most once (exactly once but for those of a free whose release threw).
static void raw_callbacks_throw_through_the_c_abi() {
    RawHost host;
    loader_config cfg = loader::default_config();
    cfg.page_size = 4;
    cfg.prefetch_distance = 0;
    cfg.max_auto_retries = 8;
    loader_callbacks cb{};
    cb.struct_size = sizeof cb;
    cb.userdata = &host;
    cb.issue = &RawHost::on_issue;
    cb.release = &RawHost::on_release;
    cb.changed = &RawHost::on_changed;
    cb.cancel = &RawHost::on_cancel;
    cb.compare = &RawHost::on_compare;
    loader_handle h = 0;
    EXPECT(loader_new(&cfg, &cb, &h) == LOADER_RESULT_OK);
    auto state = [&] {
        loader_snapshot s{};
        s.struct_size = sizeof s;
        EXPECT(loader_state(h, &s) == LOADER_RESULT_OK);
        return s;
    };
    auto take = [&] {
        loader::Read r = host.reads.front();
        host.reads.pop_front();
        return r;
    };

    // A read whose `issue` threw through the library was let go of on the way out: an own
    // failure, nothing outstanding. The host queued it before it threw, and its answer is
    // late (stale). `recover` answers what is queued, then retries until quiescent.
    auto recover = [&] {
        for (int i = 0; i < 100 && !state().quiescent; i++) {
            host.answer_all(h);
            if (state().failure == LOADER_FAILURE_OWN) {
                bool started = false;
                EXPECT(loader_retry(h, &started) == LOADER_RESULT_OK && started);
            }
        }
        EXPECT(state().quiescent);
    };
    EXPECT(raw_throw_through(host, h, [&] { return loader_set_window(h, 0, 8); }) != 0);
    EXPECT(host.reads.size() == 1 && state().outstanding_reads == 0);
    EXPECT(state().failure == LOADER_FAILURE_OWN);
    EXPECT(raw_throw_through(host, h, [&] { return host.answer(h, take()); }) != 0);  // a late answer's release
    recover();
    EXPECT(state().covered_end == 8 && state().quiescent);

    EXPECT(raw_throw_through(host, h, [&] { return loader_invalidate(h); }) != 0);
    EXPECT(!host.reads.empty() && host.reads.front().kind == LOADER_KIND_CHAIN);
    EXPECT(state().outstanding_reads == 0);
    EXPECT(raw_throw_through(host, h, [&] { return host.answer(h, take(), true); }) != 0);  // settle_counted
    recover();
    EXPECT(state().quiescent && state().covered_end == 8);

    std::string five = be64(5);
    const auto *c5 = reinterpret_cast<const uint8_t *>(five.data());
    EXPECT(raw_throw_through(host, h, [&] { return loader_invalidate_range(h, c5, 8, c5, 8); }) != 0);
    EXPECT(host.reads.size() == 1 && host.reads.front().until == be64(8));
    recover();

    std::string twenty = be64(20);
    EXPECT(raw_throw_through(host, h, [&] {
               return loader_jump(h, reinterpret_cast<const uint8_t *>(twenty.data()), 8, 20);
           }) != 0);
    recover();
    EXPECT(state().quiescent && state().window_start == 20);

    // An own failure, recorded by loader_fail; the retry's read (its `issue` throws: let go
    // of); loader_abandon of a read still needed (a failure too); the backoff retry fired by
    // loader_tick.
    EXPECT(loader_set_window(h, 20, 12) == LOADER_RESULT_OK && host.reads.size() == 1);
    EXPECT(raw_throw_through(host, h, [&] { return loader_fail(h, take().read_id, 5, nullptr); }) != 0);
    // (An unwinding call writes no out-parameter: the read it started is in `reads`.)
    EXPECT(raw_throw_through(host, h, [&] { return loader_retry(h, nullptr); }) != 0);
    // Nothing else was owed: the retry reads the failed page again (a finite read).
    EXPECT(host.reads.size() == 1 && host.reads.front().kind == LOADER_KIND_FINITE);
    EXPECT(state().outstanding_reads == 0);
    host.reads.clear();  // the host drops the read its `issue` could not take
    bool started = false;
    EXPECT(loader_retry(h, &started) == LOADER_RESULT_OK && started && host.reads.size() == 1);
    EXPECT(raw_throw_through(host, h, [&] { return loader_abandon(h, take().read_id, nullptr); }) != 0);
    bool armed = false;
    uint64_t deadline = 0;
    EXPECT(loader_next_deadline(h, &armed, &deadline) == LOADER_RESULT_OK && armed);
    EXPECT(raw_throw_through(host, h, [&] { return loader_tick(h, deadline); }) != 0);
    EXPECT(host.reads.size() == 1);
    recover();
    loader_snapshot s = state();
    EXPECT(s.quiescent && s.failure == LOADER_FAILURE_NONE && s.covered_end == 32);

    // A pinned view defers the releases of a repair; loader_view_release makes them.
    loader_view_snapshot *view = nullptr;
    EXPECT(loader_view_acquire(h, &view) == LOADER_RESULT_OK);
    size_t released_before = host.released.size();
    EXPECT(loader_invalidate(h) == LOADER_RESULT_OK);
    host.answer_all(h);
    EXPECT(host.released.size() == released_before);
    EXPECT(raw_throw_through(host, h, [&] { return loader_view_release(view); }) == 2);
    EXPECT(host.released.size() > released_before);
    for (auto &kv : host.released) EXPECT(kv.second == 1);
    EXPECT(host.released.size() == host.next_acq - 1 - state().pages);

    // loader_free: a release throws; the free is complete (the handle is gone). The header
    // says the releases left on this thread are then not made: none is made twice.
    EXPECT(state().pages > 0);
    host.throws_left = 1;
    int caught = 0;
    try {
        (void)loader_free(h);
    } catch (const HostError &e) {
        caught = e.value;
    }
    EXPECT(caught == 2 && host.throws_left == 0);
    loader_snapshot gone{};
    gone.struct_size = sizeof gone;
    EXPECT(loader_state(h, &gone) == LOADER_RESULT_STALE_HANDLE || loader_state(h, &gone) == LOADER_RESULT_INVALID_HANDLE);
    for (auto &kv : host.released) EXPECT(kv.second == 1);
}

int main() {
    an_issue_that_throws_is_rethrown_after_the_call();
    a_traversal_with_throwing_issues_completes_by_the_deadline_alone();
    a_non_standard_exception_comes_back();
    releases_that_throw_miss_no_release();
    deferred_releases_that_throw_miss_no_release();
    nested_calls_lose_no_exception();
    an_error_escaping_a_callback_is_marked();
    a_loader_freed_inside_its_own_callback();
    threads_keep_their_exceptions_apart();
    a_thread_may_end_inside_a_callback();
    raw_callbacks_throw_through_the_c_abi();
    std::printf("cpp_callbacks (C++%ld): %d passed, %d failed\n", long(__cplusplus / 100 % 100), passed.load(),
                failed.load());
    return failed ? 1 : 0;
}
