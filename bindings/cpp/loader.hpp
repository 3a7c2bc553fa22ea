// loader.hpp: a header-only C++17 RAII wrapper over libloader's C ABI (include/loader.h).
//
// `loader::Loader` owns one loader handle; it is move-only and frees the handle in its
// destructor. Callbacks are std::function; a call that fails throws `loader::Error`, which
// carries the `loader_result` code. Callbacks run as the C ABI documents: on the calling thread,
// outside the library's locks, and possibly nested (a callback may call back into the loader).
// An exception a callback throws passes through the C library (its callbacks are
// unwind-capable) and out of the call that delivered it, with the loader still consistent
// and usable; see include/loader.h. The destructor is noexcept: a callback that throws from
// inside it calls std::terminate.
#ifndef LOADER_HPP
#define LOADER_HPP

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "loader.h"

namespace loader {

// A failed call: `code()` is the library's result code, `what()` its message.
class Error : public std::runtime_error {
public:
    explicit Error(loader_result code) : std::runtime_error(loader_result_str(static_cast<int32_t>(code))), code_(code) {}
    loader_result code() const noexcept { return code_; }

private:
    loader_result code_;
};

inline void check(loader_result r) {
    if (r != LOADER_RESULT_OK) throw Error(r);
}

// A read, with the cursor bytes copied out of the callback's argument.
struct Read {
    uint64_t read_id;
    uint64_t request_id;
    loader_kind kind;
    uint64_t epoch;
    uint32_t step;
    std::vector<uint8_t> cursor;
    uint32_t limit;
};

struct Callbacks {
    std::function<void(const Read &)> issue;          // required
    std::function<void(uintptr_t)> release;           // required
    std::function<void()> changed;                    // optional
    std::function<void(uint64_t)> cancel;             // optional
};

inline loader_config default_config() {
    loader_config c;
    check(loader_config_default(&c));
    return c;
}

class Loader {
public:
    explicit Loader(Callbacks callbacks, const loader_config &config = default_config())
        : host_(std::make_unique<Host>(std::move(callbacks))) {
        if (!host_->cb.issue || !host_->cb.release) throw Error(LOADER_RESULT_MISSING_CALLBACK);
        loader_callbacks c{};
        c.userdata = host_.get();  // stable: the Host lives on the heap across moves
        c.issue = &Host::on_issue;
        c.release = &Host::on_release;
        c.changed = &Host::on_changed;
        c.cancel = &Host::on_cancel;
        check(loader_new(&config, &c, &handle_));
    }

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

    // Frees the loader now: every held acquisition is released before this returns.
    void reset() noexcept {
        if (handle_ != 0) {
            loader_free(handle_);
            handle_ = 0;
        }
    }

    loader_handle handle() const noexcept { return handle_; }

    loader_answer settle(uint64_t read_id, uintptr_t acquisition, uint32_t count,
                         const std::vector<uint8_t> &next_cursor, bool end_of_source) {
        loader_answer a{};
        check(loader_settle(handle_, read_id, acquisition, count, next_cursor.empty() ? nullptr : next_cursor.data(),
                            next_cursor.size(), end_of_source, &a));
        return a;
    }
    loader_answer fail(uint64_t read_id, int32_t code) {
        loader_answer a{};
        check(loader_fail(handle_, read_id, code, &a));
        return a;
    }
    void invalidate() { check(loader_invalidate(handle_)); }
    bool retry() {
        bool started = false;
        check(loader_retry(handle_, &started));
        return started;
    }
    void set_window(uint64_t start, uint64_t len) { check(loader_set_window(handle_, start, len)); }
    void tick(uint64_t now_ms) { check(loader_tick(handle_, now_ms)); }
    std::optional<uint64_t> next_deadline() const {
        bool armed = false;
        uint64_t at = 0;
        check(loader_next_deadline(handle_, &armed, &at));
        return armed ? std::optional<uint64_t>(at) : std::nullopt;
    }
    loader_snapshot state() const {
        loader_snapshot s{};
        check(loader_state(handle_, &s));
        return s;
    }
    std::vector<loader_request_info> requests() const {
        return list<loader_request_info>([this](loader_request_info *out, size_t cap, size_t *len) {
            return loader_requests(handle_, out, cap, len);
        });
    }
    std::vector<loader_page> view(bool *revalidating = nullptr) const {
        return list<loader_page>([this, revalidating](loader_page *out, size_t cap, size_t *len) {
            return loader_view(handle_, out, cap, len, revalidating);
        });
    }

private:
    struct Host {
        explicit Host(Callbacks c) : cb(std::move(c)) {}
        Callbacks cb;
        static void on_issue(void *ud, const loader_read *r) {
            const uint8_t *p = r->cursor;
            Read read{r->read_id, r->request_id, r->kind, r->epoch, r->step,
                      std::vector<uint8_t>(p, p + (p ? r->cursor_len : 0)), r->limit};
            static_cast<Host *>(ud)->cb.issue(read);
        }
        static void on_release(void *ud, uintptr_t acquisition) { static_cast<Host *>(ud)->cb.release(acquisition); }
        static void on_changed(void *ud) {
            auto &f = static_cast<Host *>(ud)->cb.changed;
            if (f) f();
        }
        static void on_cancel(void *ud, uint64_t read_id) {
            auto &f = static_cast<Host *>(ud)->cb.cancel;
            if (f) f(read_id);
        }
    };

    // Calls a capacity/out_len listing function until the buffer fits.
    template <typename T, typename F>
    static std::vector<T> list(F call) {
        std::vector<T> out(16);
        for (;;) {
            size_t len = 0;
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
    std::unique_ptr<Host> host_;
};

}  // namespace loader

#endif
