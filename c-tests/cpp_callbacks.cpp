// The C++ wrapper's callback boundary (bindings/cpp/loader.hpp): what a callback throws is
// caught in the trampoline, never passed through the C library, and rethrown by the thread's
// outermost wrapper call once the C call has completed. Nested calls lose nothing, a release
// that throws costs no other release, threads keep their exceptions apart, a Loader may be
// freed inside its own callback, and a thread may end inside one.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
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

// The exception reaches the caller with its own type, after the whole call: the read it was
// issuing is outstanding and the callbacks after the throwing one still ran.
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
    int caught = 0;
    try {
        l.set_window(0, 10);
    } catch (const HostError &e) {
        caught = e.value;
    }
    EXPECT(caught == 7);
    EXPECT(loader::suppressed().empty());
    EXPECT(h.reads.size() == 1 && h.changes > 0);
    EXPECT(l.state().outstanding_reads == 1);
    // Nothing is left over: the next call throws nothing, and the host finishes normally.
    while (!h.reads.empty()) {
        loader::Read r = h.reads.front();
        h.reads.pop_front();
        h.answer(l, r);
    }
    EXPECT(l.state().covered_end == 12);
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
    EXPECT(h.reads.size() == 1 && l.state().outstanding_reads == 1);
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
    EXPECT(h.reads.size() == 1 && l.state().outstanding_reads == 1);
    while (!h.reads.empty()) {
        loader::Read r = h.reads.front();
        h.reads.pop_front();
        h.answer(l, r);
    }
    EXPECT(l.state().covered_end == 12);
    l.close();
    EXPECT(h.released_exactly_once());
}

int main() {
    an_issue_that_throws_is_rethrown_after_the_call();
    a_non_standard_exception_comes_back();
    releases_that_throw_miss_no_release();
    deferred_releases_that_throw_miss_no_release();
    nested_calls_lose_no_exception();
    an_error_escaping_a_callback_is_marked();
    a_loader_freed_inside_its_own_callback();
    threads_keep_their_exceptions_apart();
    a_thread_may_end_inside_a_callback();
    std::printf("cpp_callbacks (C++%ld): %d passed, %d failed\n", long(__cplusplus / 100 % 100), passed.load(),
                failed.load());
    return failed ? 1 : 0;
}
