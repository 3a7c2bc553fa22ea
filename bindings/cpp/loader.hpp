// loader.hpp: the header-only C++17 wrapper over libloader's C ABI (include/loader.h).
//
// `loader::Loader` owns one loader handle; `loader::Callbacks` holds the host's callbacks as
// std::function; `loader::Config` names only the settings a host changes; `loader::PinnedView`
// owns a pinned view. A call the library refuses throws `loader::Error`, which carries the
// `loader_result` code. It covers every public function of loader.h (`make cpp-test` checks
// it). examples/cpp_feed.cpp is a complete threaded host. C++17; under C++20 `settle`,
// `settle_counted`, `jump` and `invalidate_range` also take cursors as std::spans of bytes.
//
// What the wrapper guarantees:
//
// Exceptions. No exception ever passes through the C library. Each callback runs inside a
//   trampoline that catches whatever it throws and stashes it for the calling thread; the
//   thread's outermost wrapper call (settle, settle_counted, fail, abandon, invalidate,
//   invalidate_range, retry, set_window, jump, tick, close, PinnedView::release) rethrows the
//   first one after the C call has returned, so the library's state change is complete and
//   every other callback of that call was still made: a `release` that throws never costs
//   another acquisition its release. The others thrown during the same call are in
//   `loader::suppressed()` on that thread until its next outermost call. A wrapper call made
//   from inside a callback (a synchronous host settles inside `issue`) never rethrows: what
//   callbacks threw before it, and what its own callbacks throw (they run after the running
//   callback returns), is rethrown by the outermost call, so nothing is lost. The exception
//   is rethrown as it was thrown (its own type), except that a `loader::Error` escaping a
//   callback comes back with `in_callback()` true: a `loader::Error` with `in_callback()`
//   false means the call itself was refused and changed nothing (a refused settle accepted
//   nothing; the host still owns the acquisition). A callback's exception wins over the
//   call's own error. A thread that ends inside a callback (pthread_exit's forced unwind) is
//   let through, as the C ABI allows. An `issue` that throws has not taken its read: the
//   trampoline lets the read go at once (loader_abandon), before the exception is rethrown,
//   so nothing stays outstanding. For a read still needed that is an own failure, which the
//   usual retry rules recover (the backoff retry through `tick`, `retry`, a window move); an
//   answer the host gives it later anyway is classified LOADER_ANSWER_STALE and its
//   acquisition released at once. Destructors and `reset()` cannot throw: they drop what
//   the release and cancel callbacks they caused threw; `close()` and `release()` rethrow it.
//
// Threads. The library's rules hold for every member function and callback: include/loader.h,
//   THREADS and CALLBACKS (callbacks of calls on different threads overlap, so the host's
//   callbacks must be safe on every thread that calls in). The wrapper adds two: move,
//   `close`, `reset` and the destructor need no other thread to be in a call on this Loader;
//   and a Loader may be closed or destroyed from inside one of its own callbacks (its
//   callbacks are kept alive until the thread's outermost call returns).
//
// Ownership. The library's rules: include/loader.h, OWNERSHIP. close, reset and the destructor
//   free the loader, so every acquisition it holds but those a pinned view lists is released
//   before they return. `Read` owns a copy of its cursor, so a host may
//   answer it later from any thread; `settle` copies the cursor it is given. `state()`,
//   `stats()`, `requests()` and `view()` return copies; the acquisitions a `View` lists are
//   not pinned (a call on another thread may release them at any time). `pin_view()` returns
//   a `PinnedView`, which owns a pinned view: until it is released (`release()`, or its
//   destructor), no acquisition it lists is released, so the host may read what they name.
//   A PinnedView may outlive its Loader; it keeps the Loader's callbacks alive, and the
//   releases it deferred go through them.
#ifndef LOADER_HPP
#define LOADER_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
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

// The library's version, e.g. "0.1.0" (`loader_version`).
inline std::string_view version() noexcept { return loader_version(); }

// The host's pointer-sized token for whatever holds a page's items.
using Acquisition = loader_acquisition;

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
// from any thread. Cursors are positions between items: a forward read answers up to `limit`
// items just after `cursor`, a backward read those just before it, in source order either
// way, with the cursor just before the first item returned as `next_cursor` and
// `end_of_source` meaning the source's START (see `loader_direction` in loader.h).
struct Read {
    std::uint64_t read_id = 0;
    std::uint64_t request_id = 0;
    loader_kind kind = LOADER_KIND_FINITE;
    std::uint64_t epoch = 0;
    std::uint32_t step = 0;
    std::string cursor{};  // opaque bytes; empty: the source's start
    std::uint32_t limit = 0;
    loader_direction direction = LOADER_DIRECTION_FORWARD;
    // A bounded read (a ranged repair's, always forward): answer only the items after
    // `cursor` and at or before `*until`, at most `limit`; fewer than `limit` says `until`
    // or the source's end was reached (loader_read.until in loader.h). Empty: unbounded.
    std::optional<std::string> until{};
};

// The host's callbacks. `issue` and `release` are required; the others may stay empty, and a
// brace list may leave them out: `loader::Callbacks{on_issue, on_release}`.
struct Callbacks {
    std::function<void(const Read &)> issue{};
    std::function<void(Acquisition)> release{};
    std::function<void()> changed{};
    std::function<void(std::uint64_t)> cancel{};
    // Orders two non-empty cursors as the source does: negative, 0 or positive. Only
    // `invalidate_range` needs it (without it, that throws `Error` with
    // LOADER_RESULT_NO_COMPARE). It runs inside the library's state change, under its lock:
    // a pure function that calls no Loader member (loader_compare_fn in loader.h). What it
    // throws is rethrown by `invalidate_range`, and the comparison counts as equal, so the
    // invalidation may then have marked too little: call `invalidate()` to be sure.
    std::function<int(std::string_view, std::string_view)> compare{};
    // The cursor whose next item is at `position` in the source's own numbering (the key of
    // item `position - 1`; empty for 0), or nullopt when unknown. Asked by `set_window` for a
    // move farther than `loader_config.jump_threshold` from the held pages, with no
    // remembered cursor within a page of it: the move then starts there and reads about the
    // window plus prefetch, instead of walking. Like `compare`, it runs inside the library's
    // state change, under its lock, and calls no Loader member (loader_locate_fn in loader.h).
    // What it throws is rethrown by `set_window`, which took the answer as unknown; a cursor
    // longer than LOADER_MAX_CURSOR_LEN is unknown too.
    std::function<std::optional<std::string>(std::uint64_t)> locate{};
};

// The library's default settings (`loader_config_default`).
inline loader_config default_config() {
    loader_config c{};
    c.struct_size = sizeof c;
    check(loader_config_default(&c));
    return c;
}

// Settings: each field left empty keeps the library's default, so a host names only what it
// changes (`Config cfg; cfg.page_size = 20;`, or `{.page_size = 20}` under C++20).
struct Config {
    std::optional<std::uint32_t> page_size{};
    // Items kept loaded on each side of the window, past its end and before its start.
    std::optional<std::uint64_t> prefetch_distance{};
    std::optional<std::uint64_t> drop_margin{};
    std::optional<std::uint64_t> backoff_initial_ms{};
    std::optional<std::uint64_t> backoff_max_ms{};
    std::optional<double> backoff_multiplier{};
    std::optional<std::uint32_t> max_auto_retries{};
    std::optional<std::uint64_t> jitter_seed{};
    std::optional<bool> recheck_full{};
    // The most pages the view holds (default LOADER_DEFAULT_MAX_PAGES; 0: no bound); loader.h
    // gives the exact bound.
    std::optional<std::uint32_t> max_pages{};
    // A move farther than this beyond the held pages starts at the nearest cursor known (a
    // page read before, the source's start, `Callbacks::locate`) instead of walking (default
    // LOADER_JUMP_THRESHOLD_AUTO: the window plus twice the prefetch; 0: always walk).
    std::optional<std::uint64_t> jump_threshold{};
    // The cursor memo's budget in bytes (0: remember none; loader_config in loader.h).
    std::optional<std::uint64_t> cursor_memo_bytes{};
    // How long (ms of the `tick` clock) a superseded read's answer is awaited before the
    // loader lets it go, as `abandon` would (0: never).
    std::optional<std::uint64_t> read_timeout_ms{};
    // A starting point: the loader opens around the item just after `initial_cursor`, which
    // gets position `initial_position` (as `Loader::jump` would; loader_config in loader.h).
    std::optional<std::string> initial_cursor{};
    std::optional<std::uint64_t> initial_position{};
    // Whether a repair an invalidation overtook runs to its end and commits (the default), or
    // is settled stale and replaced. Takes effect only with `recheck_full` on; with it off,
    // ignored (not an error; loader_config in loader.h).
    std::optional<bool> commit_overtaken{};

    // The C settings: the defaults, with every field set here applied. The C config's
    // `initial_cursor` points into this Config's string: use it while this Config lives.
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
        if (max_pages) c.max_pages = *max_pages;
        if (read_timeout_ms) c.read_timeout_ms = *read_timeout_ms;
        if (jump_threshold) c.jump_threshold = *jump_threshold;
        if (cursor_memo_bytes) c.cursor_memo_bytes = *cursor_memo_bytes;
        if (initial_cursor && !initial_cursor->empty()) {
            c.initial_cursor = reinterpret_cast<const std::uint8_t *>(initial_cursor->data());
            c.initial_cursor_len = initial_cursor->size();
        }
        if (initial_position) c.initial_position = *initial_position;
        if (commit_overtaken) c.commit_overtaken = *commit_overtaken ? 1 : 0;
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
// pointer as userdata. Shared: a pinned view outliving its Loader still has releases to make.
struct Host {
    Callbacks cb;
    // The loader's handle, once loader_new returned it: a read whose `issue` threw is let go
    // of through it.
    loader_handle handle = 0;
};

// One owner's reference to a Host. Allocated with its owner, so that giving it up inside a
// call (it waits in the thread's list until the outermost call returns: one of the host's
// callbacks may be running) cannot fail.
struct HostRef {
    std::shared_ptr<Host> host;
    std::unique_ptr<HostRef> next;
};

// One thread's wrapper calls.
struct ThreadCalls {
    unsigned depth = 0;                          // wrapper calls running on this thread
    std::vector<std::exception_ptr> errors;      // thrown by callbacks during the outermost call
    std::vector<std::exception_ptr> suppressed;  // all but the first, after it was rethrown
    bool out_of_memory = false;                  // an exception could not be stashed
    std::unique_ptr<HostRef> retired;            // given up during the running outermost call
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
        while (t.retired) t.retired = std::move(t.retired->next);
    }

private:
    ThreadCalls &t_;
    bool done_ = false;
};

// Gives up an owner's reference to its Host once the thread's outermost call returns.
inline void retire(std::unique_ptr<HostRef> ref) noexcept {
    if (!ref) return;
    ThreadCalls &t = thread_calls();
    ref->next = std::move(t.retired);
    t.retired = std::move(ref);
    if (t.depth == 0) Call::retire_all(t);
}

// Makes a C call that may deliver callbacks, as a call that cannot throw: what its callbacks
// throw is dropped, and what an enclosing call's callbacks threw is kept for that call.
template <typename F>
void run_isolated(F &&c_call) noexcept {
    ThreadCalls &t = thread_calls();
    std::vector<std::exception_ptr> outer;
    outer.swap(t.errors);
    bool outer_oom = std::exchange(t.out_of_memory, false);
    ++t.depth;
    c_call();
    --t.depth;
    t.errors.swap(outer);
    t.out_of_memory = outer_oom;
}

// loader_explain's text for `handle`, all of it.
inline std::string explain_of(loader_handle handle) {
    std::string text(256, '\0');
    for (;;) {
        std::size_t len = 0;
        loader_result r = loader_explain(handle, text.data(), text.size(), &len);
        if (r == LOADER_RESULT_BUFFER_TOO_SMALL) {
            text.assign(len + 64, '\0');  // it may grow before the next call
            continue;
        }
        check(r);
        text.resize(len);
        return text;
    }
}

// The library's read, copied into the wrapper's `Read` (cursors owned as strings).
inline Read read_of(const loader_read *r) {
    Read read;
    read.read_id = r->read_id;
    read.request_id = r->request_id;
    read.kind = r->kind;
    read.epoch = r->epoch;
    read.step = r->step;
    if (r->cursor != nullptr) read.cursor.assign(reinterpret_cast<const char *>(r->cursor), r->cursor_len);
    read.limit = r->limit;
    read.direction = r->direction;
    if (r->until != nullptr) read.until.emplace(reinterpret_cast<const char *>(r->until), r->until_len);
    return read;
}

}  // namespace detail

// A contiguous run of entries owned by something else (a pinned view).
template <typename T>
class Slice {
public:
    Slice() noexcept = default;
    Slice(const T *data, std::size_t size) noexcept : data_(data), size_(size) {}
    const T *begin() const noexcept { return data_; }
    const T *end() const noexcept { return data_ + size_; }
    const T *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    const T &operator[](std::size_t i) const noexcept { return data_[i]; }

private:
    const T *data_ = nullptr;
    std::size_t size_ = 0;
};

// A pinned view (`loader_view_acquire`): the view's pages, whether it was revalidating, the
// loader's state and its live requests, all from one moment. Until it is released, no
// acquisition it lists is released, so the host may read the items behind every listed page,
// from any thread. Move-only; the destructor releases it. Any number of threads may read one
// PinnedView at once; releasing (or destroying) it must not overlap a read. It may outlive
// its Loader: the releases it deferred are made when it goes, through the Loader's callbacks,
// which it keeps alive.
class PinnedView {
public:
    PinnedView() noexcept = default;
    PinnedView(const PinnedView &) = delete;
    PinnedView &operator=(const PinnedView &) = delete;
    PinnedView(PinnedView &&o) noexcept
        : view_(std::exchange(o.view_, nullptr)), host_(std::move(o.host_)), pages_(o.pages_), requests_(o.requests_),
          revalidating_(o.revalidating_), state_(o.state_) {}
    PinnedView &operator=(PinnedView &&o) noexcept {
        if (this != &o) {
            reset();
            view_ = std::exchange(o.view_, nullptr);
            host_ = std::move(o.host_);
            pages_ = o.pages_;
            requests_ = o.requests_;
            revalidating_ = o.revalidating_;
            state_ = o.state_;
        }
        return *this;
    }
    ~PinnedView() { reset(); }

    // Whether it still pins anything (not released, not moved from).
    explicit operator bool() const noexcept { return view_ != nullptr; }
    // The view's pages in source order; empty once released.
    Slice<loader_page> pages() const noexcept { return view_ ? pages_ : Slice<loader_page>(); }
    // The live requests, in id order; empty once released.
    Slice<loader_request_info> requests() const noexcept { return view_ ? requests_ : Slice<loader_request_info>(); }
    // A repair or full read was pending or running: the pages are the old view.
    bool revalidating() const noexcept { return revalidating_; }
    // The loader's state at that moment.
    const loader_snapshot &state() const noexcept { return state_; }

    // Unpins: the releases it deferred are made now (or, inside a callback, before the
    // thread's outermost call returns), and what they throw is rethrown as any call's.
    void release() {
        if (view_ == nullptr) return;
        detail::Call call;
        loader_result r = loader_view_release(std::exchange(view_, nullptr));
        detail::retire(std::move(host_));
        call.finish();
        check(r);
    }
    // As `release`, but cannot throw: what the deferred releases throw is dropped.
    void reset() noexcept {
        if (view_ == nullptr) return;
        loader_view_snapshot *v = std::exchange(view_, nullptr);
        detail::run_isolated([v] { loader_view_release(v); });
        detail::retire(std::move(host_));
    }

private:
    friend class Loader;
    // Takes ownership of `view`; `host` keeps the loader's callbacks alive while it is held.
    PinnedView(loader_view_snapshot *view, std::unique_ptr<detail::HostRef> host) noexcept
        : view_(view), host_(std::move(host)) {
        // These only fail on a NULL argument, and none is NULL: on failure they write nothing.
        const loader_page *pages = nullptr;
        std::size_t npages = 0;
        if (loader_view_pages(view_, &pages, &npages, &revalidating_) == LOADER_RESULT_OK) pages_ = {pages, npages};
        const loader_request_info *reqs = nullptr;
        std::size_t nreqs = 0;
        if (loader_view_requests(view_, &reqs, &nreqs) == LOADER_RESULT_OK) requests_ = {reqs, nreqs};
        state_.struct_size = sizeof state_;
        (void)loader_view_state(view_, &state_);
    }

    loader_view_snapshot *view_ = nullptr;
    std::unique_ptr<detail::HostRef> host_;
    Slice<loader_page> pages_;
    Slice<loader_request_info> requests_;
    bool revalidating_ = false;
    loader_snapshot state_{};
};

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
        detail::retire(std::move(host_));
        call.finish();
        check(r);
    }

    // As `close`, but cannot throw: what the callbacks of the free throw is dropped. Any
    // exception stashed by an enclosing call on this thread is kept for it.
    void reset() noexcept {
        if (handle_ == 0) return;
        loader_handle h = std::exchange(handle_, 0);
        detail::run_isolated([h] { loader_free(h); });
        detail::retire(std::move(host_));
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
    // `settle` from a host that knows how many items come before the page's first item (a
    // count query, an offset its API returns): when the page enters the view, the view is
    // renumbered so that the page starts at `items_before`, and the window moves with it. A
    // count that contradicts the view is ignored (loader_settle_counted in loader.h).
    loader_answer settle_counted(std::uint64_t read_id, Acquisition acquisition, std::uint32_t count,
                                 std::string_view next_cursor, bool end_of_source, std::uint64_t items_before) {
        return settle_bytes(read_id, acquisition, count, reinterpret_cast<const std::uint8_t *>(next_cursor.data()),
                            next_cursor.size(), end_of_source, items_before);
    }
#ifdef LOADER_HPP_SPAN
    loader_answer settle_counted(std::uint64_t read_id, Acquisition acquisition, std::uint32_t count,
                                 std::span<const std::uint8_t> next_cursor, bool end_of_source,
                                 std::uint64_t items_before) {
        return settle_bytes(read_id, acquisition, count, next_cursor.data(), next_cursor.size(), end_of_source,
                            items_before);
    }
#endif
    // Answers `read_id` with a failure; `code` is the host's own.
    loader_answer fail(std::uint64_t read_id, std::int32_t code) {
        loader_answer a = LOADER_ANSWER_CURRENT;
        run([&] { return loader_fail(handle_, read_id, code, &a); });
        return a;
    }
    // The host gives up on `read_id` and will not answer it. For a read the loader no longer
    // needs (it was sent a `cancel` hint) this costs nothing: LOADER_ANSWER_STALE. For one
    // still needed it is a failure, as `fail`: LOADER_ANSWER_CURRENT (loader_abandon in
    // loader.h).
    loader_answer abandon(std::uint64_t read_id) {
        loader_answer a = LOADER_ANSWER_CURRENT;
        run([&] { return loader_abandon(handle_, read_id, &a); });
        return a;
    }
    void invalidate() { run([&] { return loader_invalidate(handle_); }); }
    // Items were added after the source's last item, and nothing else changed: the cheap
    // report of an append (nothing re-read; when the window wants the end, one read returns
    // just the new items). Not `invalidate_range(last cursor)`, which re-reads the last page
    // (loader_appended in loader.h).
    void appended() { run([&] { return loader_appended(handle_); }); }
    // Follow mode, as `tail -f` / `less +F`: pins the window to the source's end (its length
    // kept); a `set_window` away unpins, one back to the end pins again; `jump` unpins
    // (loader_follow in loader.h).
    void follow(bool on = true) { run([&] { return loader_follow(handle_, on); }); }
    // Whether the window is pinned to the source's end now.
    bool following() const {
        bool on = false;
        loader_result r = loader_following(handle_, &on);
        if (r != LOADER_RESULT_OK) throw Error(r);
        return on;
    }
    // The source changed only between the positions `from` (empty: the source's start) and
    // `to` (nullopt: the source's end), both included; one changed row is `from == to == its
    // cursor`. Only the held pages that may hold a changed item are re-read, with bounded reads
    // (`Read::until`); the rest of the view is kept (loader_invalidate_range in loader.h).
    // Needs `Callbacks::compare`. Throws `Error` if refused; a refusal changes nothing.
    void invalidate_range(std::string_view from, std::optional<std::string_view> to = std::nullopt) {
        const std::uint8_t *t = nullptr;
        if (to) t = reinterpret_cast<const std::uint8_t *>(to->data());
        invalidate_range_bytes(reinterpret_cast<const std::uint8_t *>(from.data()), from.size(), to.has_value(), t,
                               to ? to->size() : 0);
    }
#ifdef LOADER_HPP_SPAN
    void invalidate_range(std::span<const std::uint8_t> from,
                          std::optional<std::span<const std::uint8_t>> to = std::nullopt) {
        invalidate_range_bytes(from.data(), from.size(), to.has_value(), to ? to->data() : nullptr,
                               to ? to->size() : 0);
    }
#endif
    // Retries a recorded own failure now; returns whether a read started.
    bool retry() {
        bool started = false;
        run([&] { return loader_retry(handle_, &started); });
        return started;
    }
    void set_window(std::uint64_t start, std::uint64_t len) { run([&] { return loader_set_window(handle_, start, len); }); }
    void tick(std::uint64_t now_ms) { run([&] { return loader_tick(handle_, now_ms); }); }
    // Rebuilds the view around `cursor` (a position between items; empty: the source's
    // start): the item just after it gets `position`, and the window moves there, its length
    // kept (loader_jump in loader.h). Throws `Error` if refused; a refusal changes nothing.
    void jump(std::string_view cursor, std::uint64_t position) {
        jump_bytes(reinterpret_cast<const std::uint8_t *>(cursor.data()), cursor.size(), position);
    }
#ifdef LOADER_HPP_SPAN
    void jump(std::span<const std::uint8_t> cursor, std::uint64_t position) {
        jump_bytes(cursor.data(), cursor.size(), position);
    }
#endif

    // Records this loader's run to the file at `path`, for `loader-check --replay` and for a
    // bug report (loader_record in loader.h): call it right after construction, before any
    // other call. Throws `Error` (LOADER_RESULT_RECORD_FAILED) when the file cannot be
    // created, after the first call, or when LOADER_RECORD already records the loader.
    void record(const std::string &path) { check(loader_record(handle_, path.c_str())); }

    // When to call `tick` next: a backoff retry is armed, or a superseded read will time out
    // (`Config::read_timeout_ms`); nullopt if neither.
    std::optional<std::uint64_t> next_deadline() const {
        bool armed = false;
        std::uint64_t at = 0;
        check(loader_next_deadline(handle_, &armed, &at));
        return armed ? std::optional<std::uint64_t>(at) : std::nullopt;
    }
    // What the loader is doing (loader_snapshot in loader.h).
    loader_snapshot state() const {
        loader_snapshot s{};
        s.struct_size = sizeof s;
        check(loader_state(handle_, &s));
        return s;
    }
    // Counters since the loader was created.
    loader_counts stats() const {
        loader_counts c{};
        c.struct_size = sizeof c;
        check(loader_stats(handle_, &c));
        return c;
    }
    // Why the loader waits, in plain sentences, one a line (loader_explain): "quiescent", or
    // the reads it waits for, a repair running, a failure and what retries it. For people and
    // logs; decide with `state()`. No callback runs.
    std::string explain() const { return detail::explain_of(handle_); }
    // Every live request, in id order.
    std::vector<loader_request_info> requests() const {
        return list<loader_request_info>(
            [this](loader_request_info *out, std::size_t cap, std::size_t *len) { return loader_requests(handle_, out, cap, len); });
    }
    // Pins the view: see PinnedView. No callback runs.
    PinnedView pin_view() const {
        if (!host_) throw Error(LOADER_RESULT_INVALID_HANDLE);  // closed or moved from
        auto ref = std::make_unique<detail::HostRef>();
        ref->host = host_->host;
        loader_view_snapshot *v = nullptr;
        check(loader_view_acquire(handle_, &v));
        return PinnedView(v, std::move(ref));
    }
    // A copy of the view's pages and whether they are being revalidated. Its acquisitions are
    // not pinned: use pin_view() to read what they name while other threads call in.
    View view() const {
        View v;
        v.pages = list<loader_page>([this, &v](loader_page *out, std::size_t cap, std::size_t *len) {
            return loader_view(handle_, out, cap, len, &v.revalidating);
        });
        return v;
    }

private:
    Loader(Callbacks callbacks, const loader_config &config, int) : host_(std::make_unique<detail::HostRef>()) {
        if (!callbacks.issue || !callbacks.release) throw Error(LOADER_RESULT_MISSING_CALLBACK);
        host_->host = std::make_shared<detail::Host>();
        detail::Host *host = host_->host.get();
        host->cb = std::move(callbacks);
        loader_callbacks c{};
        c.struct_size = sizeof c;
        c.userdata = host;
        c.issue = &on_issue;
        c.release = &on_release;
        c.changed = host->cb.changed ? &on_changed : nullptr;
        c.cancel = host->cb.cancel ? &on_cancel : nullptr;
        c.compare = host->cb.compare ? &on_compare : nullptr;
        c.locate = host->cb.locate ? &on_locate : nullptr;
        check(loader_new(&config, &c, &handle_));
        host->handle = handle_;
    }

    template <typename F>
    static void run(F &&c_call) {
        detail::Call call;
        loader_result r = c_call();
        call.finish();
        check(r);
    }

    // `items_before` given: loader_settle_counted; otherwise loader_settle.
    loader_answer settle_bytes(std::uint64_t read_id, Acquisition acquisition, std::uint32_t count,
                               const std::uint8_t *cursor, std::size_t cursor_len, bool end_of_source,
                               std::optional<std::uint64_t> items_before = std::nullopt) {
        loader_answer a = LOADER_ANSWER_CURRENT;
        const std::uint8_t *c = cursor_len ? cursor : nullptr;
        run([&] {
            return items_before ? loader_settle_counted(handle_, read_id, acquisition, count, c, cursor_len,
                                                        end_of_source, *items_before, &a)
                                : loader_settle(handle_, read_id, acquisition, count, c, cursor_len, end_of_source, &a);
        });
        return a;
    }

    // `has_to` false: up to the source's end (a NULL `to`). A `to` of length 0 is the source's
    // start, passed as a non-NULL pointer whatever `to` points at.
    void invalidate_range_bytes(const std::uint8_t *from, std::size_t from_len, bool has_to, const std::uint8_t *to,
                                std::size_t to_len) {
        static const std::uint8_t empty = 0;
        const std::uint8_t *f = from_len ? from : nullptr;
        const std::uint8_t *t = has_to ? (to_len ? to : &empty) : nullptr;
        run([&] { return loader_invalidate_range(handle_, f, from_len, t, to_len); });
    }

    void jump_bytes(const std::uint8_t *cursor, std::size_t cursor_len, std::uint64_t position) {
        run([&] { return loader_jump(handle_, cursor_len ? cursor : nullptr, cursor_len, position); });
    }

    // An `issue` that throws lets its read go (loader_abandon, a nested call: its callbacks
    // run after this one returns) so that it does not stay outstanding; the exception is
    // stashed and rethrown by the outermost call as any callback's.
    static void on_issue(void *ud, const loader_read *r) {
        auto *host = static_cast<detail::Host *>(ud);
        bool returned = false;
        detail::trampoline([&] {
            host->cb.issue(detail::read_of(r));
            returned = true;
        });
        // Already answered inside `issue`, or the loader freed there: refused, and harmless.
        if (!returned) (void)loader_abandon(host->handle, r->read_id, nullptr);
    }
    static void on_release(void *ud, loader_acquisition acquisition) {
        detail::trampoline([&] { static_cast<detail::Host *>(ud)->cb.release(acquisition); });
    }
    static void on_changed(void *ud) {
        detail::trampoline([&] { static_cast<detail::Host *>(ud)->cb.changed(); });
    }
    static void on_cancel(void *ud, std::uint64_t read_id) {
        detail::trampoline([&] { static_cast<detail::Host *>(ud)->cb.cancel(read_id); });
    }
    // Nothing may unwind out of it (the library would abort): what `compare` throws is
    // stashed like a callback's, and the comparison counts as equal.
    static std::int32_t on_compare(void *ud, const std::uint8_t *a, std::size_t a_len, const std::uint8_t *b,
                                   std::size_t b_len) noexcept {
        int r = 0;
        detail::trampoline([&] {
            r = static_cast<detail::Host *>(ud)->cb.compare(
                std::string_view(reinterpret_cast<const char *>(a), a_len),
                std::string_view(reinterpret_cast<const char *>(b), b_len));
        });
        return r < 0 ? -1 : r > 0 ? 1 : 0;
    }

    // Nothing may unwind out of it either: what `locate` throws is stashed like a callback's,
    // and the answer counts as unknown.
    static std::int32_t on_locate(void *ud, std::uint64_t position, std::uint8_t *cursor, std::size_t capacity,
                                  std::size_t *cursor_len) noexcept {
        std::int32_t found = LOADER_LOCATE_UNKNOWN;
        detail::trampoline([&] {
            std::optional<std::string> c = static_cast<detail::Host *>(ud)->cb.locate(position);
            if (c && c->size() <= capacity) {
                if (!c->empty()) std::memcpy(cursor, c->data(), c->size());
                *cursor_len = c->size();
                found = LOADER_LOCATE_FOUND;
            }
        });
        return found;
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
    std::unique_ptr<detail::HostRef> host_;  // this Loader's reference to its callbacks
};


// ---- the feed: the library runs the loads (loader_feed_* in loader.h) ----

// What a feed's load returns for one read: at most `read.limit` items in source order, the
// cursor where the next read that way starts, and whether the source ends there (starts, for a
// backward read). See `Read` for the directions and bounded reads.
template <typename T>
struct Page {
    std::vector<T> items{};
    std::string next_cursor{};
    bool end_of_source = false;
};

// A feed's settings: its worker threads, the loader's settings, how long the destructor waits
// for loads still running, and the cursor order ranged invalidation needs.
struct FeedOptions {
    std::uint32_t workers = 4;
    Config loader{};
    // How long the destructor waits for loads still running (negative: as long as it takes).
    std::chrono::milliseconds close_timeout{-1};
    // Orders two non-empty cursors as the source does (see `Callbacks::compare`); needed by
    // `invalidate_range`. It should not throw: a throw counts as "equal" (the range then ends
    // there) and is kept in `Feed::last_error()`.
    std::function<int(std::string_view, std::string_view)> compare{};
    // The cursor whose next item is at a position, for a far `set_window` (see
    // `Callbacks::locate`); nullopt when unknown. It runs on the thread calling `set_window`,
    // inside it, and must not throw (a throw counts as unknown).
    std::function<std::optional<std::string>(std::uint64_t)> locate{};
    // Called after the view or the state changed (see `Callbacks::changed`), on whichever
    // thread changed it: a worker, the feed's clock thread, or a caller's. Keep it short; what
    // it throws is kept in `Feed::last_error()` (nothing may unwind into the library).
    std::function<void()> changed{};
};

// A loader whose reads the library runs on threads of its own, through `load`. `load` runs on
// the feed's worker threads, several at once: it must be safe for that. What it throws fails
// its read (the loader's backoff retries it) and is kept in `last_error()`. A load that returns
// more than `limit` items, or the cursor it was given, is a bug the feed reports from
// `wait_quiescent` (it throws `Error`). Move-only; the destructor frees the feed (see `close`).
template <typename T>
class Feed {
public:
    using Load = std::function<Page<T>(const Read &)>;

    explicit Feed(Load load, FeedOptions options = FeedOptions{})
        : state_(std::make_shared<State>()), close_timeout_(options.close_timeout) {
        state_->self = state_;
        state_->load = std::move(load);
        state_->compare = std::move(options.compare);
        state_->locate = std::move(options.locate);
        state_->changed = std::move(options.changed);
        loader_config lc = options.loader.to_c();
        loader_feed_config fc{};
        fc.struct_size = sizeof fc;
        fc.workers = options.workers;
        fc.userdata = state_.get();
        fc.load = state_->load ? &Feed::on_load : nullptr;
        fc.release = &Feed::on_release;
        fc.compare = state_->compare ? &Feed::on_compare : nullptr;
        fc.locate = state_->locate ? &Feed::on_locate : nullptr;
        fc.changed = state_->changed ? &Feed::on_changed : nullptr;
        fc.loader = &lc;
        check(loader_feed_new(&fc, &handle_));
        check(loader_feed_loader(handle_, &loader_));
    }
    Feed(const Feed &) = delete;
    Feed &operator=(const Feed &) = delete;
    Feed(Feed &&o) noexcept
        : state_(std::move(o.state_)), handle_(std::exchange(o.handle_, 0)), loader_(o.loader_),
          close_timeout_(o.close_timeout_), final_(o.final_) {}
    Feed &operator=(Feed &&o) noexcept {
        if (this != &o) {
            (void)close(close_timeout_);
            state_ = std::move(o.state_);
            handle_ = std::exchange(o.handle_, 0);
            loader_ = o.loader_;
            close_timeout_ = o.close_timeout_;
            final_ = o.final_;
        }
        return *this;
    }
    ~Feed() { (void)close(close_timeout_); }

    // Frees the feed: every page goes back, and it waits up to `timeout` (negative: as long as
    // it takes) for the loads still running. A load still running then is let go: its thread
    // ends when it returns, and what the load and its page need stays alive until then.
    // Returns how many loads it let go. Idempotent. `counts()` then returns the counts as the
    // free left them.
    std::uint32_t close(std::chrono::milliseconds timeout) noexcept {
        if (handle_ == 0) return 0;
        std::uint32_t left = 0;
        loader_feed_counts c{};
        c.struct_size = sizeof c;
        loader_feed_handle h = std::exchange(handle_, 0);
        auto ms = static_cast<std::int64_t>(timeout.count());
        loader_result r = loader_feed_free_counted(h, ms, &left, &c);
        if (r == LOADER_RESULT_OK)
            final_ = c;
        else if (r != LOADER_RESULT_STALE_HANDLE && r != LOADER_RESULT_INVALID_HANDLE)
            (void)loader_feed_free(h, ms, &left);  // refused before freeing anything: free plainly
        return left;
    }

    void set_window(std::uint64_t start, std::uint64_t len) { check(loader_feed_set_window(handle_, start, len)); }
    void jump(std::string_view cursor, std::uint64_t position) {
        check(loader_feed_jump(handle_, bytes(cursor), cursor.size(), position));
    }
    void invalidate() { check(loader_feed_invalidate(handle_)); }
    // Items were added after the source's last item (Loader::appended).
    void appended() { check(loader_feed_appended(handle_)); }
    // Pins the window to the source's end, or stops following (Loader::follow).
    void follow(bool on = true) { check(loader_feed_follow(handle_, on)); }
    // Whether the window is pinned to the source's end now.
    bool following() const {
        bool on = false;
        check(loader_following(loader_, &on));
        return on;
    }
    // The source changed only between `from` and `to` (none: the source's end).
    void invalidate_range(std::string_view from, std::optional<std::string_view> to = std::nullopt) {
        check(loader_feed_invalidate_range(handle_, bytes(from), from.size(), to ? bytes(*to) : nullptr,
                                           to ? to->size() : 0));
    }
    // Retries a recorded failure now (and clears a bug the feed reported); whether a read started.
    bool retry() {
        bool started = false;
        check(loader_feed_retry(handle_, &started));
        return started;
    }
    // Waits until the loader is quiescent: true, or false when `timeout` passed first; a
    // negative `timeout` waits as long as it takes, as loader_feed_wait_quiescent does (and
    // so does `wait_quiescent()`). Throws `Error` when the feed cannot settle until the host
    // acts (LOADER_RESULT_COUNT_OVER_LIMIT, _CURSOR_STALLED, _RETRIES_SPENT, ...:
    // loader_feed_wait_quiescent in loader.h).
    template <typename Rep, typename Period>
    bool wait_quiescent(std::chrono::duration<Rep, Period> timeout) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
        return wait_ms(ms < 0 ? -1 : static_cast<std::int64_t>(ms));
    }
    bool wait_quiescent() { return wait_ms(-1); }
    // The loader the feed drives, for `loader_state`, `loader_stats` and the like: the feed's
    // own handle (a feed's handle is its loader's; `loader_free` refuses it).
    loader_handle loader() const noexcept { return loader_; }
    loader_counts stats() const {
        loader_counts c{};
        c.struct_size = sizeof c;
        check(loader_stats(loader_, &c));
        return c;
    }
    // What the loader is doing (loader_snapshot in loader.h): the window, what the view
    // covers (`covered_start`, `covered_end`: positions), quiescence, the failure recorded.
    loader_snapshot state() const {
        loader_snapshot s{};
        s.struct_size = sizeof s;
        check(loader_state(loader_, &s));
        return s;
    }
    // Why the feed waits, in plain sentences, one a line (loader_explain): the loader's
    // lines, then the feed's (`feed:`: loads running, where the pages went, what the last
    // failing load returned). For people and logs; decide with `state()`.
    std::string explain() const { return detail::explain_of(loader_); }
    // The feed's counters (loader_feed_counts in loader.h): every page a load returned and
    // where it went. After `close` (or the destructor's), the counts the free left: with no
    // load left running, `handed_out == accepted + given_back` and `accepted ==
    // released_by_loader`. Throws `Error` on a moved-from Feed that was never closed.
    loader_feed_counts counts() const {
        if (handle_ == 0) {
            if (final_) return *final_;
            throw Error(LOADER_RESULT_STALE_HANDLE);
        }
        loader_feed_counts c{};
        c.struct_size = sizeof c;
        check(loader_feed_stats(handle_, &c));
        return c;
    }
    // What the latest failed load threw (empty if none did).
    std::exception_ptr last_error() const {
        std::lock_guard<std::mutex> lock(state_->mutex);
        return state_->last_error;
    }

    // The view, pinned: its items typed, readable while the workers run; released on
    // destruction. `size()`, `operator[]`, and iteration over `pages()`.
    class View {
    public:
        View(const View &) = delete;
        View &operator=(const View &) = delete;
        View(View &&o) noexcept
            : view_(std::exchange(o.view_, nullptr)), pages_(std::move(o.pages_)), starts_(std::move(o.starts_)),
              size_(o.size_), revalidating_(o.revalidating_), state_(o.state_) {}
        ~View() {
            if (view_ != nullptr) (void)loader_view_release(view_);
        }
        // The items of each page, in source order.
        const std::vector<const std::vector<T> *> &pages() const noexcept { return pages_; }
        std::size_t size() const noexcept { return size_; }
        const T &operator[](std::size_t i) const {
            for (const auto *p : pages_) {
                if (i < p->size()) return (*p)[i];
                i -= p->size();
            }
            throw std::out_of_range("loader::Feed::View index");
        }
        // The position of each page's first item, in source order (`pages()`'s order).
        const std::vector<std::uint64_t> &starts() const noexcept { return starts_; }
        // The position of the view's first item (0 for an empty view).
        std::uint64_t start() const noexcept { return starts_.empty() ? 0 : starts_.front(); }
        // The item at `position` (the source's numbering), or nullptr when the view does not
        // hold it.
        const T *at_position(std::uint64_t position) const noexcept {
            for (std::size_t i = 0; i < pages_.size(); i++) {
                if (position >= starts_[i] && position - starts_[i] < pages_[i]->size())
                    return &(*pages_[i])[static_cast<std::size_t>(position - starts_[i])];
            }
            return nullptr;
        }
        // The pages are the old view: a repair or full read was pending or running.
        bool revalidating() const noexcept { return revalidating_; }
        // The loader's state at the moment the view was pinned.
        const loader_snapshot &state() const noexcept { return state_; }
        // A copy of the items.
        std::vector<T> items() const {
            std::vector<T> out;
            out.reserve(size_);
            for (const auto *p : pages_) out.insert(out.end(), p->begin(), p->end());
            return out;
        }

    private:
        friend class Feed;
        explicit View(loader_handle l) {
            check(loader_view_acquire(l, &view_));
            const loader_page *pages = nullptr;
            std::size_t n = 0;
            bool revalidating = false;
            (void)loader_view_pages(view_, &pages, &n, &revalidating);
            revalidating_ = revalidating;
            for (std::size_t i = 0; i < n; i++) {
                const auto *box = reinterpret_cast<const Box *>(pages[i].acquisition);
                pages_.push_back(&box->page.items);
                starts_.push_back(pages[i].start);
                size_ += box->page.items.size();
            }
            state_.struct_size = sizeof state_;
            (void)loader_view_state(view_, &state_);
        }
        loader_view_snapshot *view_ = nullptr;
        std::vector<const std::vector<T> *> pages_{};
        std::vector<std::uint64_t> starts_{};
        std::size_t size_ = 0;
        bool revalidating_ = false;
        loader_snapshot state_{};
    };
    View view() const { return View(loader_); }
    std::vector<T> items() const { return view().items(); }

private:
    bool wait_ms(std::int64_t ms) {
        loader_result r = loader_feed_wait_quiescent(handle_, ms);
        if (r == LOADER_RESULT_TIMED_OUT) return false;
        check(r);
        return true;
    }
    struct State {
        std::weak_ptr<State> self;
        Load load;
        std::function<int(std::string_view, std::string_view)> compare;
        std::function<std::optional<std::string>(std::uint64_t)> locate;
        std::function<void()> changed;
        std::mutex mutex;
        std::exception_ptr last_error;
    };
    // A page as the library holds it; it keeps the state alive (a load left running at close
    // hands its page back after the Feed is gone).
    struct Box {
        Page<T> page;
        std::shared_ptr<State> keep;
    };

    static const std::uint8_t *bytes(std::string_view s) noexcept {
        return reinterpret_cast<const std::uint8_t *>(s.data());
    }

    static std::int32_t on_load(void *ud, const loader_read *r, loader_load_result *out) {
        auto *st = static_cast<State *>(ud);
        std::shared_ptr<State> keep = st->self.lock();
        try {
            auto *box = new Box{st->load(detail::read_of(r)), std::move(keep)};
            out->acquisition = reinterpret_cast<loader_acquisition>(box);
            out->count = static_cast<std::uint32_t>(
                box->page.items.size() > UINT32_MAX ? UINT32_MAX : box->page.items.size());
            out->next_cursor = bytes(box->page.next_cursor);
            out->next_cursor_len = box->page.next_cursor.size();
            out->end_of_source = box->page.end_of_source;
            return 0;
        } catch (...) {
            std::lock_guard<std::mutex> lock(st->mutex);
            st->last_error = std::current_exception();
            return 1;
        }
    }
    static void on_release(void *, loader_acquisition a) { delete reinterpret_cast<Box *>(a); }
    static void on_changed(void *ud) noexcept {
        auto *st = static_cast<State *>(ud);
        try {
            st->changed();
        } catch (...) {
            // Nothing may unwind into the library (it would abort).
            std::lock_guard<std::mutex> lock(st->mutex);
            st->last_error = std::current_exception();
        }
    }
    static std::int32_t on_compare(void *ud, const std::uint8_t *a, std::size_t a_len, const std::uint8_t *b,
                                   std::size_t b_len) noexcept {
        auto *st = static_cast<State *>(ud);
        try {
            int r = st->compare(std::string_view(reinterpret_cast<const char *>(a), a_len),
                                std::string_view(reinterpret_cast<const char *>(b), b_len));
            return r < 0 ? -1 : r > 0 ? 1 : 0;
        } catch (...) {
            // Nothing may unwind into the library (it would abort).
            std::lock_guard<std::mutex> lock(st->mutex);
            st->last_error = std::current_exception();
            return 0;
        }
    }
    static std::int32_t on_locate(void *ud, std::uint64_t position, std::uint8_t *cursor, std::size_t capacity,
                                  std::size_t *cursor_len) noexcept {
        try {
            std::optional<std::string> c = static_cast<State *>(ud)->locate(position);
            if (!c || c->size() > capacity) return LOADER_LOCATE_UNKNOWN;
            if (!c->empty()) std::memcpy(cursor, c->data(), c->size());
            *cursor_len = c->size();
            return LOADER_LOCATE_FOUND;
        } catch (...) {
            return LOADER_LOCATE_UNKNOWN;
        }
    }

    std::shared_ptr<State> state_;
    loader_feed_handle handle_ = 0;
    loader_handle loader_ = 0;
    std::chrono::milliseconds close_timeout_{-1};
    // The counts the free left, once closed.
    std::optional<loader_feed_counts> final_{};
};

}  // namespace loader

#endif
