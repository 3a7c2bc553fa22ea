// loader.hpp: the header-only C++17 wrapper over libloader's C ABI (include/loader.h).
//
// `loader::Loader` owns one loader handle; `loader::Callbacks` holds the host's callbacks as
// std::function; `loader::Config` names only the settings a host changes. A call the library
// refuses throws `loader::Error`, which carries the `loader_result` code. examples/cpp_feed.cpp
// is a complete threaded host.
//
// What the wrapper guarantees:
//
// Exceptions. No exception ever passes through the C library. Each callback runs inside a
//   trampoline that catches whatever it throws and stashes it for the calling thread; the
//   thread's outermost wrapper call (settle, fail, invalidate, retry, set_window, tick, close)
//   rethrows the first one after the C call has returned, so the library's state change is
//   complete and every other callback of that call was still made: a `release` that throws
//   never costs another acquisition its release. The others thrown during the same call are in
//   `loader::suppressed()` on that thread until its next outermost call. A wrapper call made
//   from inside a callback (a synchronous host settles inside `issue`) never rethrows: what
//   callbacks threw before it, and what its own callbacks throw (they run after the running
//   callback returns), is rethrown by the outermost call, so nothing is lost. The exception
//   is rethrown as it was thrown (its own type), except that a `loader::Error` escaping a
//   callback comes back with `in_callback()` true: a `loader::Error` with `in_callback()`
//   false means the call itself was refused and changed nothing (a refused settle accepted
//   nothing; the host still owns the acquisition). A callback's exception wins over the
//   call's own error. A thread that ends inside a callback (pthread_exit's forced unwind) is
//   let through, as the C ABI allows. The destructor and `reset()` cannot throw: they drop
//   what the release and cancel callbacks of the free threw; `close()` rethrows it.
//
// Threads. Any thread may call any member function of one Loader concurrently with others,
//   except move, `close`, `reset` and the destructor, which need no other thread to be in a
//   call on this Loader. Callbacks run on the thread that made the call, outside the
//   library's locks, so the host's callbacks must be safe to run on every thread that calls
//   in. A Loader may be closed or destroyed from inside one of its own callbacks: its
//   callbacks are kept alive until the thread's outermost call returns.
//
// Ownership. On a successful settle the loader owns the acquisition and passes it to
//   `release` exactly once: when its request is retired, its page dropped, or the loader
//   freed (close, reset or the destructor release every acquisition still held before they
//   return). `Read` owns a copy of its cursor, so a host may answer it later from any thread;
//   `settle` copies the cursor it is given. `state()`, `stats()`, `requests()` and `view()`
//   return copies; the acquisitions a `View` lists are still the loader's, valid only until
//   the loader releases them (a later call on any thread may), so read them only while no
//   other call can retire them.
#ifndef LOADER_HPP
#define LOADER_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#define LOADER_HPP_SPAN 1
#endif
#endif

#include "loader.h"

namespace loader {

// The host's pointer-sized token for whatever holds a page's items.
using Acquisition = std::uintptr_t;

// A failed call: `code()` is the library's result code, `what()` its message.
class Error : public std::runtime_error {
public:
    explicit Error(loader_result code, bool in_callback = false)
        : std::runtime_error(loader_result_str(static_cast<std::int32_t>(code))), code_(code), in_callback_(in_callback) {}
    loader_result code() const noexcept { return code_; }
    // True when a callback let this error escape (a nested call it made was refused); the call
    // it was rethrown from is then not the one that failed.
    bool in_callback() const noexcept { return in_callback_; }

private:
    loader_result code_;
    bool in_callback_;
};

// Throws `Error` for every result but `LOADER_RESULT_OK`.
inline void check(loader_result r) {
    if (r != LOADER_RESULT_OK) throw Error(r);
}

// A read the loader asks the host to perform. It owns its cursor: keep it, answer it later,
// from any thread.
struct Read {
    std::uint64_t read_id = 0;
    std::uint64_t request_id = 0;
    loader_kind kind = LOADER_KIND_FINITE;
    std::uint64_t epoch = 0;
    std::uint32_t step = 0;
    std::string cursor{};  // opaque bytes; empty: the source's start
    std::uint32_t limit = 0;
};

// The host's callbacks. `issue` and `release` are required; the others may stay empty, and a
// brace list may leave them out: `loader::Callbacks{on_issue, on_release}`.
struct Callbacks {
    std::function<void(const Read &)> issue{};
    std::function<void(Acquisition)> release{};
    std::function<void()> changed{};
    std::function<void(std::uint64_t)> cancel{};
};

// The library's default settings (`loader_config_default`).
inline loader_config default_config() {
    loader_config c{};
    check(loader_config_default(&c));
    return c;
}

// Settings: each field left empty keeps the library's default, so a host names only what it
// changes (`Config cfg; cfg.page_size = 20;`, or `{.page_size = 20}` under C++20).
struct Config {
    std::optional<std::uint32_t> page_size{};
    std::optional<std::uint64_t> prefetch_distance{};
    std::optional<std::uint64_t> drop_margin{};
    std::optional<std::uint64_t> backoff_initial_ms{};
    std::optional<std::uint64_t> backoff_max_ms{};
    std::optional<double> backoff_multiplier{};
    std::optional<std::uint32_t> max_auto_retries{};
    std::optional<std::uint64_t> jitter_seed{};
    std::optional<bool> recheck_full{};

    // The C settings: the defaults, with every field set here applied.
    loader_config to_c() const {
        loader_config c = default_config();
        if (page_size) c.page_size = *page_size;
        if (prefetch_distance) c.prefetch_distance = *prefetch_distance;
        if (drop_margin) c.drop_margin = *drop_margin;
        if (backoff_initial_ms) c.backoff_initial_ms = *backoff_initial_ms;
        if (backoff_max_ms) c.backoff_max_ms = *backoff_max_ms;
        if (backoff_multiplier) c.backoff_multiplier = *backoff_multiplier;
        if (max_auto_retries) c.max_auto_retries = *max_auto_retries;
        if (jitter_seed) c.jitter_seed = *jitter_seed;
        if (recheck_full) c.recheck_full = *recheck_full ? 1 : 0;
        return c;
    }
};

// The view's pages in source order, and whether a repair or full read is pending (the pages
// are then the old view). A copy: the acquisitions listed are still the loader's.
struct View {
    std::vector<loader_page> pages{};
    bool revalidating = false;
};

namespace detail {

// One loader's callbacks, on the heap so a Loader can move while the C library holds the
// pointer as userdata.
struct Host {
    Callbacks cb;
    // Hosts freed during a call wait here (a list, so retiring one cannot fail) until the
    // thread's outermost call returns: one of their callbacks may be running.
    std::unique_ptr<Host> next_retired;
};

// One thread's wrapper calls.
struct ThreadCalls {
    unsigned depth = 0;                          // wrapper calls running on this thread
    std::vector<std::exception_ptr> errors;      // thrown by callbacks during the outermost call
    std::vector<std::exception_ptr> suppressed;  // all but the first, after it was rethrown
    bool out_of_memory = false;                  // an exception could not be stashed
    std::unique_ptr<Host> retired;
};

inline ThreadCalls &thread_calls() noexcept {
    static thread_local ThreadCalls t;
    return t;
}

// Runs a callback: what it throws is stashed for the thread's outermost call, never let into
// the C library. A foreign exception, which no exception_ptr can hold (pthread_exit's forced
// unwind: the thread is ending), is the one thing let through, as the C ABI allows.
template <typename F>
void trampoline(F &&body) {
    std::exception_ptr caught;
    try {
        body();
        return;
    } catch (const Error &e) {
        try {
            caught = std::make_exception_ptr(Error(e.code(), true));
        } catch (...) {
            caught = std::current_exception();  // bad_alloc: still an exception to report
        }
    } catch (...) {
        caught = std::current_exception();
        if (!caught) throw;
    }
    ThreadCalls &t = thread_calls();
    try {
        t.errors.push_back(std::move(caught));
    } catch (...) {
        t.out_of_memory = true;
    }
}

// One wrapper call that may deliver callbacks. `finish` ends it and, at the thread's outermost
// call, rethrows the first exception a callback threw.
class Call {
public:
    Call() noexcept : t_(thread_calls()) { ++t_.depth; }
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;
    // Reached without `finish` only when a forced unwind passes (the thread is ending).
    ~Call() {
        if (!done_) leave();
    }

    void finish() {
        done_ = true;
        if (leave()) {
            if (!t_.errors.empty()) {
                std::exception_ptr first = t_.errors.front();
                t_.suppressed.assign(t_.errors.begin() + 1, t_.errors.end());
                t_.errors.clear();
                std::rethrow_exception(first);
            }
            if (t_.out_of_memory) {
                t_.out_of_memory = false;
                throw std::bad_alloc();
            }
        }
    }

private:
    // Returns whether this was the thread's outermost call; then frees the retired hosts.
    bool leave() noexcept {
        if (--t_.depth != 0) return false;
        t_.suppressed.clear();
        retire_all(t_);
        return true;
    }

public:
    static void retire_all(ThreadCalls &t) noexcept {
        while (t.retired) t.retired = std::move(t.retired->next_retired);
    }

private:
    ThreadCalls &t_;
    bool done_ = false;
};

}  // namespace detail

// The exceptions callbacks threw during this thread's last outermost call, after the first
// (which that call rethrew). Cleared when the thread's next outermost call returns.
inline const std::vector<std::exception_ptr> &suppressed() noexcept { return detail::thread_calls().suppressed; }

// One loader: move-only; the destructor frees it.
class Loader {
public:
    explicit Loader(Callbacks callbacks, const Config &config = Config{}) : Loader(std::move(callbacks), config.to_c(), 0) {}
    // The C settings as they are (from `default_config()`, then changed).
    Loader(Callbacks callbacks, const loader_config &config) : Loader(std::move(callbacks), config, 0) {}

    Loader(const Loader &) = delete;
    Loader &operator=(const Loader &) = delete;
    Loader(Loader &&other) noexcept : handle_(std::exchange(other.handle_, 0)), host_(std::move(other.host_)) {}
    Loader &operator=(Loader &&other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, 0);
            host_ = std::move(other.host_);
        }
        return *this;
    }
    ~Loader() { reset(); }

    // Frees the loader: `release` has run for every acquisition it held and `cancel` for every
    // read outstanding before this returns. Rethrows what those callbacks threw (at the
    // thread's outermost call). Does nothing on a freed or moved-from Loader.
    void close() {
        if (handle_ == 0) return;
        detail::Call call;
        loader_result r = loader_free(std::exchange(handle_, 0));
        retire();
        call.finish();
        check(r);
    }

    // As `close`, but cannot throw: what the callbacks of the free throw is dropped. Any
    // exception stashed by an enclosing call on this thread is kept for it.
    void reset() noexcept {
        if (handle_ == 0) return;
        detail::ThreadCalls &t = detail::thread_calls();
        std::vector<std::exception_ptr> outer;
        outer.swap(t.errors);
        bool outer_oom = std::exchange(t.out_of_memory, false);
        ++t.depth;
        loader_free(std::exchange(handle_, 0));
        retire();
        --t.depth;
        t.errors.swap(outer);
        t.out_of_memory = outer_oom;
        if (t.depth == 0) detail::Call::retire_all(t);
    }

    // The C handle, for the C functions the wrapper does not cover. Exceptions of callbacks
    // made during a C call made directly are rethrown by this thread's next wrapper call.
    loader_handle handle() const noexcept { return handle_; }

    // Answers `read_id` with `count` items held by `acquisition` and the cursor after them.
    // Returns how the answer was classified; throws `Error` (with `in_callback()` false) if
    // refused, and then the host still owns `acquisition`.
    loader_answer settle(std::uint64_t read_id, Acquisition acquisition, std::uint32_t count,
                         std::string_view next_cursor, bool end_of_source) {
        return settle_bytes(read_id, acquisition, count, reinterpret_cast<const std::uint8_t *>(next_cursor.data()),
                            next_cursor.size(), end_of_source);
    }
#ifdef LOADER_HPP_SPAN
    loader_answer settle(std::uint64_t read_id, Acquisition acquisition, std::uint32_t count,
                         std::span<const std::uint8_t> next_cursor, bool end_of_source) {
        return settle_bytes(read_id, acquisition, count, next_cursor.data(), next_cursor.size(), end_of_source);
    }
#endif
    // Answers `read_id` with a failure; `code` is the host's own.
    loader_answer fail(std::uint64_t read_id, std::int32_t code) {
        loader_answer a = LOADER_ANSWER_CURRENT;
        run([&] { return loader_fail(handle_, read_id, code, &a); });
        return a;
    }
    void invalidate() { run([&] { return loader_invalidate(handle_); }); }
    // Retries a recorded own failure now; returns whether a read started.
    bool retry() {
        bool started = false;
        run([&] { return loader_retry(handle_, &started); });
        return started;
    }
    void set_window(std::uint64_t start, std::uint64_t len) { run([&] { return loader_set_window(handle_, start, len); }); }
    void tick(std::uint64_t now_ms) { run([&] { return loader_tick(handle_, now_ms); }); }

    // When to call `tick` next, if a backoff retry is armed.
    std::optional<std::uint64_t> next_deadline() const {
        bool armed = false;
        std::uint64_t at = 0;
        check(loader_next_deadline(handle_, &armed, &at));
        return armed ? std::optional<std::uint64_t>(at) : std::nullopt;
    }
    // The spec's abstract state and the loader's counts.
    loader_snapshot state() const {
        loader_snapshot s{};
        check(loader_state(handle_, &s));
        return s;
    }
    // Counters since the loader was created.
    loader_counts stats() const {
        loader_counts c{};
        check(loader_stats(handle_, &c));
        return c;
    }
    // Every live request, in id order.
    std::vector<loader_request_info> requests() const {
        return list<loader_request_info>(
            [this](loader_request_info *out, std::size_t cap, std::size_t *len) { return loader_requests(handle_, out, cap, len); });
    }
    // The view's pages and whether they are being revalidated.
    View view() const {
        View v;
        v.pages = list<loader_page>([this, &v](loader_page *out, std::size_t cap, std::size_t *len) {
            return loader_view(handle_, out, cap, len, &v.revalidating);
        });
        return v;
    }

private:
    Loader(Callbacks callbacks, const loader_config &config, int) : host_(std::make_unique<detail::Host>()) {
        if (!callbacks.issue || !callbacks.release) throw Error(LOADER_RESULT_MISSING_CALLBACK);
        host_->cb = std::move(callbacks);
        loader_callbacks c{};
        c.userdata = host_.get();
        c.issue = &on_issue;
        c.release = &on_release;
        c.changed = host_->cb.changed ? &on_changed : nullptr;
        c.cancel = host_->cb.cancel ? &on_cancel : nullptr;
        check(loader_new(&config, &c, &handle_));
    }

    template <typename F>
    static void run(F &&c_call) {
        detail::Call call;
        loader_result r = c_call();
        call.finish();
        check(r);
    }

    loader_answer settle_bytes(std::uint64_t read_id, Acquisition acquisition, std::uint32_t count,
                               const std::uint8_t *cursor, std::size_t cursor_len, bool end_of_source) {
        loader_answer a = LOADER_ANSWER_CURRENT;
        run([&] {
            return loader_settle(handle_, read_id, acquisition, count, cursor_len ? cursor : nullptr, cursor_len,
                                 end_of_source, &a);
        });
        return a;
    }

    // The freed loader's callbacks stay alive until the thread's outermost call returns.
    void retire() noexcept {
        detail::ThreadCalls &t = detail::thread_calls();
        host_->next_retired = std::move(t.retired);
        t.retired = std::move(host_);
    }

    static void on_issue(void *ud, const loader_read *r) {
        detail::trampoline([&] {
            Read read;
            read.read_id = r->read_id;
            read.request_id = r->request_id;
            read.kind = r->kind;
            read.epoch = r->epoch;
            read.step = r->step;
            if (r->cursor != nullptr) read.cursor.assign(reinterpret_cast<const char *>(r->cursor), r->cursor_len);
            read.limit = r->limit;
            static_cast<detail::Host *>(ud)->cb.issue(read);
        });
    }
    static void on_release(void *ud, std::size_t acquisition) {
        detail::trampoline([&] { static_cast<detail::Host *>(ud)->cb.release(static_cast<Acquisition>(acquisition)); });
    }
    static void on_changed(void *ud) {
        detail::trampoline([&] { static_cast<detail::Host *>(ud)->cb.changed(); });
    }
    static void on_cancel(void *ud, std::uint64_t read_id) {
        detail::trampoline([&] { static_cast<detail::Host *>(ud)->cb.cancel(read_id); });
    }

    // Calls a capacity/out_len listing function until the buffer fits.
    template <typename T, typename F>
    static std::vector<T> list(F call) {
        std::vector<T> out(16);
        for (;;) {
            std::size_t len = 0;
            loader_result r = call(out.data(), out.size(), &len);
            if (r == LOADER_RESULT_BUFFER_TOO_SMALL) {
                out.resize(len);
                continue;
            }
            check(r);
            out.resize(len);
            return out;
        }
    }

    loader_handle handle_ = 0;
    std::unique_ptr<detail::Host> host_;
};

}  // namespace loader

#endif
