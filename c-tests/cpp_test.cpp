// Exercises bindings/cpp/loader.hpp's API: RAII, moves, Config, brace-initialised Callbacks,
// string_view cursors (and std::span under C++20), settle_counted, abandon, the view and
// pinned views, stats, state, version and Error.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <unistd.h>

#include "../bindings/cpp/loader.hpp"

static int passed, failed;
#define EXPECT(c)                                                                     \
    do {                                                                              \
        if (c) {                                                                      \
            passed++;                                                                 \
        } else {                                                                      \
            failed++;                                                                 \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c);     \
        }                                                                             \
    } while (0)

static_assert(!std::is_copy_constructible_v<loader::Loader>, "move-only");
static_assert(std::is_nothrow_move_constructible_v<loader::Loader>, "movable");
static_assert(std::is_nothrow_move_assignable_v<loader::Loader>, "movable");
static_assert(std::is_aggregate_v<loader::Callbacks> && std::is_aggregate_v<loader::Config>, "brace-initialisable");
static_assert(std::is_aggregate_v<loader::Read> && std::is_aggregate_v<loader::View>, "plain data");

// A cursor: the big-endian offset of the next item.
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
// cursor (and before `until`, for a bounded read); backward, those before it, with the cursor just before them next (empty at the
// source's start, which `end_of_source` then reports).
static loader_answer settle_from(loader::Loader &l, const loader::Read &r, loader::Acquisition acq, uint64_t len) {
    uint64_t at = from_be64(r.cursor);
    bool back = r.direction == LOADER_DIRECTION_BACKWARD;
    uint64_t to = back ? std::min(at, len) : std::min<uint64_t>(at + r.limit, len);
    if (r.until && !back) to = std::max(at, std::min(to, from_be64(*r.until)));  // a bounded read
    uint64_t from = back ? (to > r.limit ? to - r.limit : 0) : at;
    std::string next = back ? (from == 0 ? std::string() : be64(from)) : be64(to);
    return l.settle(r.read_id, acq, uint32_t(to - from), next, back ? from == 0 : to == len);
}

// Answers every queued read from a source of `len` items, in order.
static void answer_all(loader::Loader &l, std::deque<loader::Read> &reads, loader::Acquisition &next_acq, uint64_t len) {
    while (!reads.empty()) {
        loader::Read r = reads.front();
        reads.pop_front();
        settle_from(l, r, next_acq++, len);
    }
}

int main() {
    std::deque<loader::Read> reads;
    std::map<loader::Acquisition, int> released;
    loader::Acquisition next_acq = 1;
    const uint64_t source_len = 30;

    // Config names only what it changes; the rest are the library's defaults.
    {
        loader::Config cfg;
        cfg.page_size = 7;
        loader_config c = cfg.to_c();
        loader_config d = loader::default_config();
        EXPECT(c.page_size == 7 && d.page_size != 7);
        EXPECT(c.prefetch_distance == d.prefetch_distance && c.backoff_max_ms == d.backoff_max_ms);
        EXPECT(c.recheck_full == d.recheck_full);
        cfg.recheck_full = false;
        EXPECT(cfg.to_c().recheck_full == 0);
        EXPECT(c.read_timeout_ms == d.read_timeout_ms && c.commit_overtaken == d.commit_overtaken);
        EXPECT(d.read_timeout_ms != 1234 && d.commit_overtaken != 0);
        cfg.read_timeout_ms = 1234;
        cfg.commit_overtaken = false;
        c = cfg.to_c();
        EXPECT(c.read_timeout_ms == 1234 && c.commit_overtaken == 0 && c.page_size == 7);
    }

    // A recording starts right after construction, and only then; the file holds the run.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        char path[] = "/tmp/cpp_record_XXXXXX";
        int fd = mkstemp(path);
        EXPECT(fd >= 0);
        close(fd);
        loader::Config cfg;
        cfg.page_size = 5;
        cfg.prefetch_distance = 0;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }},
                         cfg);
        l.record(path);
        l.set_window(0, 10);
        answer_all(l, rs, acq, 30);
        try {
            l.record(path);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_RECORD_FAILED);
        }
        l.close();
        std::FILE *f = std::fopen(path, "r");
        EXPECT(f != nullptr);
        char line[64] = {0};
        EXPECT(std::fgets(line, sizeof line, f) != nullptr && std::string(line) == "loader-log 1\n");
        std::fclose(f);
        std::remove(path);
        for (auto &kv : rel) EXPECT(kv.second == 1);
    }

    // Follow mode: pinned to a growing source's end, each append read and shown alone; a
    // move away unpins, a move back to the end pins again.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        loader::Config cfg;
        cfg.page_size = 10;
        cfg.prefetch_distance = 0;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }},
                         cfg);
        uint64_t len = 95;
        l.set_window(0, 20);
        answer_all(l, rs, acq, len);
        EXPECT(!l.following());
        l.follow();
        answer_all(l, rs, acq, len);
        EXPECT(l.following());
        EXPECT(l.state().window_start == 75 && l.state().end_of_source);
        uint64_t before = l.stats().items_read;
        len += 4;
        l.appended();
        EXPECT(!l.state().end_of_source);
        answer_all(l, rs, acq, len);
        EXPECT(l.state().window_start == 79 && l.state().covered_end == 99 && l.state().end_of_source);
        EXPECT(l.stats().items_read - before == 4);
        l.set_window(10, 20);
        answer_all(l, rs, acq, len);
        EXPECT(!l.following());
        l.set_window(79, 20);
        answer_all(l, rs, acq, len);
        EXPECT(l.following());
        l.follow(false);
        EXPECT(!l.following());
        l.close();
        for (auto &kv : rel) EXPECT(kv.second == 1);
    }

    // The library's version, as loader.h gives it.
    EXPECT(!loader::version().empty() && loader::version() == std::string_view(loader_version()));
    EXPECT(loader::version().find('.') != std::string_view::npos);

    {
        loader::Config cfg;
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        // Only the required callbacks: no `{}` for changed and cancel (-Wextra -Werror).
        loader::Loader l({[&](const loader::Read &r) { reads.push_back(r); },
                          [&](loader::Acquisition a) { released[a]++; }},
                         cfg);
        l.set_window(0, 10);
        loader::Loader moved = std::move(l);
        EXPECT(l.handle() == 0 && moved.handle() != 0);
        EXPECT(reads.size() == 1 && reads.front().cursor.empty() && reads.front().limit == 4);
        EXPECT(moved.explain().rfind("waiting for read 1 (a page, forward from the source's start", 0) == 0);
        answer_all(moved, reads, next_acq, source_len);
        EXPECT(moved.explain() == "quiescent");
        loader::View v = moved.view();
        EXPECT(v.pages.size() == 3 && !v.revalidating);
        EXPECT(v.pages.size() == 3 && v.pages[0].acquisition == 1 && v.pages[2].start == 8 && v.pages[2].count == 4);
        loader_snapshot s = moved.state();
        EXPECT(s.covered_end == 12 && s.accepted == 3 && s.released == 0);
        loader_counts st = moved.stats();
        EXPECT(st.issued_finite == 3 && st.answered_current == 3 && st.accepted == 3 && st.released == 0);
        EXPECT(!moved.requests().empty());
        EXPECT(!moved.next_deadline().has_value());

        // An invalidation: the chain re-reads; the old view stays, revalidating.
        moved.invalidate();
        EXPECT(moved.view().revalidating);
        EXPECT(moved.explain().find("a repair is running (0 of ") != std::string::npos);
        EXPECT(!reads.empty() && reads.front().kind == LOADER_KIND_CHAIN);
        answer_all(moved, reads, next_acq, source_len);
        EXPECT(!moved.view().revalidating);
        EXPECT(moved.stats().issued_chain >= 3);
        EXPECT(released.size() == 3);  // the old pages went when the chain committed

        // A refused call throws Error, not from a callback, and changes nothing.
        try {
            moved.settle(9999, 77, 1, be64(1), false);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_UNKNOWN_READ && !e.in_callback());
            EXPECT(std::string(e.what()).find("never issued") != std::string::npos);
        }
        EXPECT(released.count(77) == 0);
        try {
            moved.set_window(UINT64_MAX, 1);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_WINDOW_OVERFLOW);
        }
        try {
            loader::Config bad;
            bad.page_size = 0;
            loader::Loader nope({[](const loader::Read &) {}, [](loader::Acquisition) {}}, bad);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_INVALID_PAGE_SIZE);
        }
        try {
            loader::Loader nope({[](const loader::Read &) {}, nullptr});
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_MISSING_CALLBACK);
        }
        // Move assignment frees what the target held.
        std::map<loader::Acquisition, int> other_released;
        std::deque<loader::Read> other_reads;
        loader::Acquisition other_acq = 1000;
        loader::Loader other({[&](const loader::Read &r) { other_reads.push_back(r); },
                              [&](loader::Acquisition a) { other_released[a]++; }},
                             loader::default_config());
        other.set_window(0, 5);
        answer_all(other, other_reads, other_acq, source_len);
        EXPECT(other.state().accepted > 0);
        other = std::move(moved);
        EXPECT(other_released.size() == other_acq - 1000 && moved.handle() == 0);
        EXPECT(other.state().covered_end == 12);
    }  // the destructor frees the loader: everything comes back
    EXPECT(released.size() == next_acq - 1);
    bool once = true;
    for (auto &kv : released) once = once && kv.second == 1;
    EXPECT(once);

    // The optional callbacks run when given; close() frees now, and later calls are refused.
    {
        int changes = 0;
        std::vector<uint64_t> cancels;
        std::deque<loader::Read> rs;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition) {},
                          [&] { changes++; }, [&](uint64_t id) { cancels.push_back(id); }});
        l.set_window(0, 10);
        EXPECT(changes > 0 && rs.size() == 1);
        l.close();
        EXPECT(cancels.size() == 1 && cancels[0] == rs.front().read_id);
        EXPECT(l.handle() == 0);
        l.close();  // idempotent
        try {
            l.tick(0);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_INVALID_HANDLE);
        }
    }

    // A pinned view: what it lists is not released while it is held, even by the free; it
    // keeps the loader's callbacks alive after the Loader is gone.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        loader::Config cfg;
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        loader::PinnedView pinned;
        EXPECT(!pinned && pinned.pages().empty());
        {
            auto l = std::make_unique<loader::Loader>(
                loader::Callbacks{[&](const loader::Read &r) { rs.push_back(r); },
                                  [&](loader::Acquisition a) { rel[a]++; }},
                cfg);
            l->set_window(0, 8);
            answer_all(*l, rs, acq, source_len);
            pinned = l->pin_view();
            EXPECT(pinned && pinned.pages().size() == 2 && !pinned.revalidating());
            EXPECT(pinned.pages()[0].acquisition == 1 && pinned.pages()[1].acquisition == 2);
            EXPECT(pinned.state().quiescent && pinned.state().covered_end == 8);
            EXPECT(!pinned.requests().empty());
            size_t n = 0;
            for (const loader_page &p : pinned.pages()) n += p.count;
            EXPECT(n == 8);
            // A repair replaces both pages: their releases wait for the pin.
            l->invalidate();
            answer_all(*l, rs, acq, source_len);
            EXPECT(l->state().released == 2 && rel.empty());
            loader::PinnedView again = l->pin_view();  // the new pages, 3 and 4
            EXPECT(again.pages().size() == 2 && again.pages()[0].acquisition == 3);
            again.release();
            EXPECT(rel.empty() && !again);
        }  // the Loader goes: 3 and 4 are released; 1 and 2 stay pinned
        EXPECT(rel.size() == 2 && rel.count(3) == 1 && rel.count(4) == 1);
        loader::PinnedView moved = std::move(pinned);
        EXPECT(!pinned && moved.pages().size() == 2);
        moved.release();  // through the callbacks of a Loader that no longer exists
        EXPECT(rel.size() == 4 && rel[1] == 1 && rel[2] == 1 && !moved && moved.pages().empty());
        try {
            loader::Loader closed({[](const loader::Read &) {}, [](loader::Acquisition) {}});
            closed.close();
            closed.pin_view();
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_INVALID_HANDLE);
        }
    }

#ifdef LOADER_TESTING
    // A poisoned loader: every call throws POISONED, and the destructor still frees it.
    {
        int rel = 0;
        std::deque<loader::Read> rs;
        loader::Acquisition acq = 1;
        loader::Config cfg;
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        {
            loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition) { rel++; }}, cfg);
            l.set_window(0, 4);
            answer_all(l, rs, acq, source_len);
            EXPECT(loader_test_panic(l.handle()) == LOADER_RESULT_PANIC);
            try {
                l.invalidate();
                EXPECT(false);
            } catch (const loader::Error &e) {
                EXPECT(e.code() == LOADER_RESULT_POISONED);
            }
        }
        EXPECT(rel == 1);
    }
#endif

    // Anchored loading: a starting point in Config, max_pages, jump, and reads both ways.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        const uint64_t len = 10000;
        loader::Config cfg;
        cfg.page_size = 10;
        cfg.prefetch_distance = 10;
        cfg.max_pages = 6;
        cfg.initial_cursor = be64(9000);
        cfg.initial_position = 9000;
        loader_config c = cfg.to_c();
        EXPECT(c.max_pages == 6 && c.initial_cursor_len == 8 && c.initial_position == 9000);
        EXPECT(loader::default_config().initial_cursor == nullptr);
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }},
                         cfg);
        EXPECT(rs.empty() && l.stats().jumps == 1);  // loader_new runs no callback
        l.set_window(9000, 20);
        bool backward = false;
        while (!rs.empty()) {
            loader::Read r = rs.front();
            rs.pop_front();
            backward |= r.direction == LOADER_DIRECTION_BACKWARD;
            EXPECT(settle_from(l, r, acq++, len) == LOADER_ANSWER_CURRENT);
        }
        loader_snapshot s = l.state();
        EXPECT(backward && s.covered_start == 8990 && s.covered_end == 9030 && !s.start_of_source);
        EXPECT(l.view().pages.front().start == 8990);
        EXPECT(l.stats().issued_backward >= 1 && l.stats().items_read == 40);

        // A jump to the source's start: positions become the source's own.
        l.jump(std::string(), 0);
        EXPECT(l.view().revalidating && l.state().window_start == 0);
        while (!rs.empty()) {
            loader::Read r = rs.front();
            rs.pop_front();
            settle_from(l, r, acq++, len);
        }
        s = l.state();
        EXPECT(s.quiescent && s.start_of_source && s.covered_start == 0 && s.window_start == 0 && s.pages <= 6);
        EXPECT(l.stats().jumps == 2);
        try {
            l.jump(be64(1), UINT64_MAX);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_WINDOW_OVERFLOW && !e.in_callback());
        }
        EXPECT(l.stats().jumps == 2);
        l.close();
        for (auto &kv : rel) EXPECT(kv.second == 1);
        EXPECT(rel.size() == acq - 1);
    }

    // Ranged invalidation: with `compare`, a range inside one page re-reads that page alone,
    // with a bounded read; without it, invalidate_range is refused; what `compare` throws
    // comes back out of invalidate_range.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        bool throw_in_compare = false;
        int compares = 0;
        loader::Callbacks cb{[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }};
        cb.compare = [&](std::string_view a, std::string_view b) {
            compares++;
            if (throw_in_compare) throw std::runtime_error("compare");
            return a.compare(b);  // big-endian offsets order as bytes
        };
        loader::Config cfg;
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        loader::Loader l(std::move(cb), cfg);
        l.set_window(0, 12);
        answer_all(l, rs, acq, source_len);
        EXPECT(l.view().pages.size() == 3);
        l.invalidate_range(be64(5), be64(5));  // an item in the page (be64(4), be64(8)]
        EXPECT(compares > 0);
        EXPECT(rs.size() == 1 && rs.front().kind == LOADER_KIND_CHAIN && rs.front().until.has_value());
        EXPECT(rs.size() == 1 && rs.front().cursor == be64(4) && rs.front().until == be64(8));
        answer_all(l, rs, acq, source_len);
        loader_counts st = l.stats();
        EXPECT(st.ranged_invalidations == 1 && st.ranged_repairs == 1);
        EXPECT(rel.size() == 1 && rel.count(2) == 1);  // only the middle page was replaced
        EXPECT(l.state().quiescent && l.view().pages.size() == 3);
        // Past the held pages, nothing in flight: no repair, the view stays current.
        l.invalidate_range(be64(20), std::nullopt);
        EXPECT(rs.empty() && l.state().quiescent && l.stats().ranged_repairs == 1);
        try {
            l.invalidate_range(be64(9), be64(2));
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_RANGE_REVERSED && !e.in_callback());
        }
        throw_in_compare = true;
        try {
            l.invalidate_range(be64(1), be64(2));
            EXPECT(false);
        } catch (const std::runtime_error &) {
            EXPECT(true);
        }
        answer_all(l, rs, acq, source_len);
        l.close();
        for (auto &kv : rel) EXPECT(kv.second == 1);
        EXPECT(rel.size() == acq - 1);
    }
    {
        std::deque<loader::Read> rs;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition) {}});
        try {
            l.invalidate_range("", std::nullopt);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_NO_COMPARE);
        }
    }

    // Far moves: with `locate`, a move far from the held pages starts at its cursor and reads
    // about the window plus prefetch; what `locate` throws comes back out of set_window, which
    // then walked (the answer counted as unknown); nullopt is unknown.
    {
        const uint64_t len = 100000;
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        int locates = 0;
        bool throw_in_locate = false, unknown = false;
        loader::Callbacks cb{[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }};
        cb.locate = [&](uint64_t position) -> std::optional<std::string> {
            locates++;
            if (throw_in_locate) throw std::runtime_error("locate");
            if (unknown) return std::nullopt;
            return position == 0 ? std::string() : be64(position);
        };
        loader::Config cfg;
        cfg.page_size = 50;
        cfg.prefetch_distance = 50;
        cfg.max_pages = 8;
        loader::Loader l(std::move(cb), cfg);
        l.set_window(0, 100);
        answer_all(l, rs, acq, len);
        loader_counts c0 = l.stats();
        l.set_window(60000, 100);
        answer_all(l, rs, acq, len);
        loader_counts c1 = l.stats();
        EXPECT(locates == 1 && c1.located - c0.located == 1);
        EXPECT(c1.items_read - c0.items_read <= 300);
        EXPECT(l.state().quiescent && l.state().covered_start <= 59950 && l.state().covered_end >= 60150);
        EXPECT(l.view().pages.front().start == l.state().covered_start);
        unknown = true;
        c0 = l.stats();
        l.set_window(30000, 100);
        EXPECT(locates == 2 && l.stats().locate_unknown - c0.locate_unknown == 1);
        answer_all(l, rs, acq, len);
        EXPECT(l.state().quiescent && l.state().covered_start <= 29950);
        unknown = false;
        throw_in_locate = true;
        try {
            l.set_window(90000, 100);
            EXPECT(false);
        } catch (const std::runtime_error &) {
            EXPECT(locates == 3);
        }
        answer_all(l, rs, acq, len);
        EXPECT(l.state().quiescent && l.state().window_start == 90000);
        l.close();
        for (auto &kv : rel) EXPECT(kv.second == 1);
        EXPECT(rel.size() == acq - 1);
    }

    // abandon: a read the loader no longer needs (it sent a `cancel` hint) is let go of at no
    // cost, and its late answer is stale and released at once; a read still needed is a
    // failure that waits for a retry; an answer to a read let go of twice is refused.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        std::vector<uint64_t> cancels;
        loader::Acquisition acq = 1;
        loader::Callbacks cb{[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }};
        cb.cancel = [&](uint64_t id) { cancels.push_back(id); };
        loader::Config cfg;
        cfg.page_size = 4;
        cfg.prefetch_distance = 0;
        cfg.max_auto_retries = 0;
        loader::Loader l(std::move(cb), cfg);
        l.set_window(0, 4);
        answer_all(l, rs, acq, source_len);
        l.set_window(0, 8);
        EXPECT(rs.size() == 1 && rs.front().kind == LOADER_KIND_FINITE);
        loader::Read finite = rs.front();
        rs.pop_front();
        l.invalidate();  // supersedes the finite read: a cancel hint
        EXPECT(cancels.size() == 1 && cancels.front() == finite.read_id);
        answer_all(l, rs, acq, source_len);
        EXPECT(!l.state().quiescent && l.state().outstanding_reads == 1);  // the finite read
        EXPECT(l.abandon(finite.read_id) == LOADER_ANSWER_STALE);
        answer_all(l, rs, acq, source_len);
        loader_snapshot s = l.state();
        EXPECT(s.quiescent && s.failure == LOADER_FAILURE_NONE && s.debt == LOADER_DEBT_NONE && s.covered_end == 8);
        EXPECT(l.stats().abandoned == 1 && l.stats().failed_own == 0);
        loader::Acquisition late = acq++;
        EXPECT(settle_from(l, finite, late, source_len) == LOADER_ANSWER_STALE);
        EXPECT(rel.count(late) == 1 && l.stats().late_answers == 1);  // released before settle returned
        try {
            l.abandon(finite.read_id);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_ALREADY_ANSWERED && !e.in_callback());
        }
        try {
            l.abandon(987654);
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_UNKNOWN_READ);
        }
        l.set_window(0, 12);
        EXPECT(rs.size() == 1);
        loader::Read needed = rs.front();
        rs.pop_front();
        EXPECT(l.abandon(needed.read_id) == LOADER_ANSWER_CURRENT);
        s = l.state();
        EXPECT(s.failure != LOADER_FAILURE_NONE && s.outstanding_reads == 0 && !s.quiescent);
        EXPECT(l.stats().failed_own == 1);
        EXPECT(l.retry() && !rs.empty());
        answer_all(l, rs, acq, source_len);
        s = l.state();
        EXPECT(s.quiescent && s.failure == LOADER_FAILURE_NONE && s.covered_end == 12);
        l.close();
        for (auto &kv : rel) EXPECT(kv.second == 1);
        EXPECT(rel.size() == acq - 1);
    }

    // settle_counted: a host that knows how many items come before each page renumbers a view
    // opened by a jump with made-up positions to the source's own, without reading back to
    // the start; plain settle leaves the jump's numbers.
    for (int counted = 0; counted < 2; counted++) {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, uint64_t> first_item;  // each acquisition's first item
        int released_count = 0;
        loader::Acquisition acq = 1;
        const uint64_t len = 5000;
        loader::Config cfg;
        cfg.page_size = 10;
        cfg.prefetch_distance = 10;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition) { released_count++; }},
                         cfg);
        l.jump(be64(1000), 10);
        l.set_window(10, 30);
        while (!rs.empty()) {
            loader::Read r = rs.front();
            rs.pop_front();
            uint64_t at = from_be64(r.cursor);
            bool back = r.direction == LOADER_DIRECTION_BACKWARD;
            uint64_t to = back ? std::min(at, len) : std::min<uint64_t>(at + r.limit, len);
            uint64_t from = back ? (to > r.limit ? to - r.limit : 0) : at;
            std::string next = back ? (from == 0 ? std::string() : be64(from)) : be64(to);
            first_item[acq] = from;
            bool end = back ? from == 0 : to == len;
            loader_answer a = counted ? l.settle_counted(r.read_id, acq, uint32_t(to - from), next, end, from)
                                      : l.settle(r.read_id, acq, uint32_t(to - from), next, end);
            EXPECT(a == LOADER_ANSWER_CURRENT);
            acq++;
        }
        loader::View v = l.view();
        bool own = !v.pages.empty();
        for (const loader_page &p : v.pages) own = own && p.start == first_item[p.acquisition];
        loader_snapshot s = l.state();
        if (counted) {
            EXPECT(own && s.window_start == 1000 && !s.start_of_source && l.stats().renumbered >= 1);
            EXPECT(l.stats().items_read <= 30 + 4 * 10);
        } else {
            EXPECT(!own && s.window_start == 10 && l.stats().renumbered == 0);
        }
        l.close();
        EXPECT(released_count == int(acq - 1));
    }

#ifdef LOADER_HPP_SPAN
    // C++20: a cursor may be a span of bytes.
    {
        std::deque<loader::Read> rs;
        int rel = 0;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition) { rel++; }},
                         loader::Config{.page_size = 4, .prefetch_distance = 0});
        l.set_window(0, 4);
        EXPECT(rs.size() == 1);
        std::vector<uint8_t> next = {0, 0, 0, 0, 0, 0, 0, 4};
        EXPECT(l.settle(rs.front().read_id, 1, 4, std::span<const uint8_t>(next), false) == LOADER_ANSWER_CURRENT);
        EXPECT(l.state().covered_end == 4);
        l.close();
        EXPECT(rel == 1);
    }
    // settle_counted with a span: the page starts at the count given.
    {
        std::deque<loader::Read> rs;
        int rel = 0;
        loader::Loader l({[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition) { rel++; }},
                         loader::Config{.page_size = 4, .prefetch_distance = 0});
        l.jump(be64(100), 0);
        l.set_window(0, 4);
        EXPECT(rs.size() == 1 && rs.front().cursor == be64(100) && rs.front().direction == LOADER_DIRECTION_FORWARD);
        std::vector<uint8_t> next = {0, 0, 0, 0, 0, 0, 0, 104};
        EXPECT(l.settle_counted(rs.front().read_id, 1, 4, std::span<const uint8_t>(next), false, 100) ==
               LOADER_ANSWER_CURRENT);
        rs.pop_front();
        loader::Acquisition more = 2;
        answer_all(l, rs, more, source_len);  // a backward read, if the jump asked for one
        loader::View v = l.view();
        EXPECT(!v.pages.empty() && l.state().window_start == 100);
        for (const loader_page &p : v.pages)
            if (p.acquisition == 1) EXPECT(p.start == 100);
        l.close();
    }
    // invalidate_range with spans: one changed item re-reads its page alone, with a bounded
    // read; `to` given as an empty span is the source's start, not its end.
    {
        std::deque<loader::Read> rs;
        std::map<loader::Acquisition, int> rel;
        loader::Acquisition acq = 1;
        loader::Callbacks cb{[&](const loader::Read &r) { rs.push_back(r); }, [&](loader::Acquisition a) { rel[a]++; }};
        cb.compare = [](std::string_view a, std::string_view b) { return a.compare(b); };
        loader::Loader l(std::move(cb), loader::Config{.page_size = 4, .prefetch_distance = 0});
        l.set_window(0, 12);
        answer_all(l, rs, acq, source_len);
        const std::vector<uint8_t> five = {0, 0, 0, 0, 0, 0, 0, 5};
        l.invalidate_range(std::span<const uint8_t>(five), std::span<const uint8_t>(five));
        EXPECT(rs.size() == 1 && rs.front().kind == LOADER_KIND_CHAIN);
        EXPECT(rs.size() == 1 && rs.front().cursor == be64(4) && rs.front().until == be64(8));
        answer_all(l, rs, acq, source_len);
        EXPECT(rel.size() == 1 && rel.count(2) == 1 && l.stats().ranged_repairs == 1);
        // From the start to the start: no held page can hold a change, nothing is read.
        l.invalidate_range(std::span<const uint8_t>(), std::span<const uint8_t>());
        EXPECT(rs.empty() && l.state().quiescent && l.stats().ranged_invalidations == 2);
        // From the start to the end: every held page is re-read, up to the last one's end.
        l.invalidate_range(std::span<const uint8_t>());
        EXPECT(!rs.empty() && rs.front().cursor.empty() && rs.front().until == be64(12));
        answer_all(l, rs, acq, source_len);
        EXPECT(rel.size() == 4 && l.state().quiescent);
        try {
            l.invalidate_range(std::span<const uint8_t>(five), std::span<const uint8_t>(five.data(), 7));
            EXPECT(false);
        } catch (const loader::Error &e) {
            EXPECT(e.code() == LOADER_RESULT_RANGE_REVERSED);
        }
        l.close();
        for (auto &kv : rel) EXPECT(kv.second == 1);
        EXPECT(rel.size() == acq - 1);
    }
#endif

    std::printf("cpp_test (C++%ld): %d passed, %d failed\n", long(__cplusplus / 100 % 100), passed, failed);
    return failed ? 1 : 0;
}
