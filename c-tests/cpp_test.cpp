// Exercises bindings/cpp/loader.hpp: RAII, moves, std::function callbacks, exceptions.
#include <cstdio>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "../bindings/cpp/loader.hpp"

static int passed, failed;
#define EXPECT(c)                                                           \
    do {                                                                    \
        if (c) {                                                            \
            passed++;                                                       \
        } else {                                                            \
            failed++;                                                       \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c); \
        }                                                                   \
    } while (0)

static_assert(!std::is_copy_constructible_v<loader::Loader>, "move-only");
static_assert(std::is_nothrow_move_constructible_v<loader::Loader>, "movable");

static std::vector<uint8_t> be64(uint64_t v) {
    std::vector<uint8_t> c(8);
    for (int i = 7; i >= 0; i--, v >>= 8) c[i] = uint8_t(v & 0xff);
    return c;
}

int main() {
    std::deque<loader::Read> reads;
    std::map<uintptr_t, int> released;
    uintptr_t next_acq = 1;
    const uint64_t source_len = 30;
    {
        loader_config cfg = loader::default_config();
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        loader::Loader l({[&](const loader::Read &r) { reads.push_back(r); },
                          [&](uintptr_t a) { released[a]++; }, nullptr, nullptr},
                         cfg);
        l.set_window(0, 10);
        loader::Loader moved = std::move(l);
        EXPECT(l.handle() == 0 && moved.handle() != 0);
        while (!reads.empty()) {
            loader::Read r = reads.front();
            reads.pop_front();
            uint64_t at = r.cursor.empty() ? 0 : [&] {
                uint64_t v = 0;
                for (uint8_t b : r.cursor) v = (v << 8) | b;
                return v;
            }();
            uint64_t end = std::min<uint64_t>(at + r.limit, source_len);
            moved.settle(r.read_id, next_acq++, uint32_t(end - at), be64(end), end == source_len);
        }
        bool reval = true;
        auto pages = moved.view(&reval);
        EXPECT(pages.size() == 3 && !reval);
        EXPECT(moved.state().covered_end == 12);
        EXPECT(!moved.requests().empty());
        EXPECT(!moved.next_deadline().has_value());
        try {
            moved.settle(9999, 77, 1, be64(1), false);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_UNKNOWN_READ);
            EXPECT(std::string(e.what()).find("never issued") != std::string::npos);
        }
        try {
            moved.set_window(UINT64_MAX, 1);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_WINDOW_OVERFLOW);
        }
        try {
            loader_config bad = loader::default_config();
            bad.page_size = 0;
            loader::Loader nope({[](const loader::Read &) {}, [](uintptr_t) {}, nullptr, nullptr}, bad);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_INVALID_PAGE_SIZE);
        }
    }  // the destructor frees the loader: everything comes back
    EXPECT(released.size() == next_acq - 1);
    bool once = true;
    for (auto &kv : released) once = once && kv.second == 1;
    EXPECT(once);

    // A callback that throws: the exception passes through the library (the callback types
    // and the calls that deliver them are C-unwind) to the caller, and the loader stays
    // usable; a callback still queued behind the throwing one runs on the next call.
    reads.clear();
    released.clear();
    next_acq = 1;
    {
        loader_config cfg = loader::default_config();
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        bool thrown = false;
        int changes = 0;
        loader::Loader t({[&](const loader::Read &r) {
                              reads.push_back(r);
                              if (!thrown) {
                                  thrown = true;
                                  throw std::runtime_error("thrown by issue");
                              }
                          },
                          [&](uintptr_t a) { released[a]++; }, [&] { changes++; }, nullptr},
                         cfg);
        bool caught = false;
        try {
            t.set_window(0, 10);
        } catch (const std::runtime_error &e) {
            caught = std::string(e.what()) == "thrown by issue";
        }
        EXPECT(caught && reads.size() == 1);
        int before = changes;
        EXPECT(t.state().outstanding_reads == 1);
        t.tick(0);
        EXPECT(changes > before);
        while (!reads.empty()) {
            loader::Read r = reads.front();
            reads.pop_front();
            uint64_t at = r.cursor.empty() ? 0 : [&] {
                uint64_t v = 0;
                for (uint8_t b : r.cursor) v = (v << 8) | b;
                return v;
            }();
            uint64_t end = std::min<uint64_t>(at + r.limit, source_len);
            t.settle(r.read_id, next_acq++, uint32_t(end - at), be64(end), end == source_len);
        }
        EXPECT(t.state().covered_end == 12);
    }
    EXPECT(released.size() == next_acq - 1 && next_acq == 4);
    for (auto &kv : released) EXPECT(kv.second == 1);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
