// loader::Feed<T> (bindings/cpp/loader.hpp): typed items from a std::function load that the
// library runs on its own threads; exceptions from load fail their reads and are retried; a
// load's bug is thrown by wait_quiescent; the pinned view is typed; RAII frees the feed while
// loads run; close() lets a stuck load go at its timeout and the page still goes back;
// follow() keeps the view on a growing source's end, reading only what appended() reports. Items
// count themselves: every page built is destroyed exactly once (and ASan sees a leak or a
// double free). Built as C++17 and C++20.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "../bindings/cpp/loader.hpp"

static int failed;
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            std::fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failed = 1;                                                           \
        }                                                                         \
    } while (0)

// An item that counts the live copies.
struct Item {
    static std::atomic<long> alive;
    std::uint64_t n = 0;
    std::string label;
    Item(std::uint64_t v) : n(v), label("item " + std::to_string(v)) { ++alive; }
    Item(const Item &o) : n(o.n), label(o.label) { ++alive; }
    Item(Item &&o) noexcept : n(o.n), label(std::move(o.label)) { ++alive; }
    Item &operator=(const Item &) = default;
    ~Item() { --alive; }
};
std::atomic<long> Item::alive{0};

static std::string cursor_of(std::uint64_t pos) {
    std::string c(8, '\0');
    for (int i = 7; i >= 0; i--, pos >>= 8) c[static_cast<std::size_t>(i)] = static_cast<char>(pos & 0xff);
    return c;
}
static std::uint64_t pos_of(const std::string &c) {
    std::uint64_t v = 0;
    for (unsigned char b : c) v = v << 8 | b;
    return v;
}

// Items 0..size-1 (`size` may grow while loads run); every `throw_every`-th load throws;
// `extra` items past the limit.
struct Source {
    std::atomic<std::uint64_t> size{1000};
    std::atomic<std::uint64_t> items_loaded{0};  // the items every load returned, summed
    std::atomic<int> loads{0};
    int throw_every = 0;
    std::atomic<std::uint32_t> extra{0};
    std::atomic<int> delay_ms{0};
    std::atomic<bool> block{false};
    std::atomic<int> throw_pct{0};   // this share of the loads throws (by a hash of its number)
    std::atomic<std::uint64_t> pages{0};  // the pages the loads returned

    loader::Page<Item> operator()(const loader::Read &r) {
        int n = ++loads;
        while (block) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
        if (throw_every && n % throw_every == 0) throw std::runtime_error("the source is down");
        if (throw_pct && static_cast<int>((static_cast<unsigned>(n) * 2654435761u >> 8) % 100) < throw_pct)
            throw std::runtime_error("the source is down");
        std::uint64_t at = pos_of(r.cursor);
        std::uint64_t items = size;  // read once: it may grow meanwhile
        loader::Page<Item> p;
        if (r.direction == LOADER_DIRECTION_FORWARD) {
            std::uint64_t end = std::min<std::uint64_t>(items, at + r.limit + extra);
            for (std::uint64_t i = at; i < end; i++) p.items.emplace_back(i);
            p.next_cursor = cursor_of(end);
            p.end_of_source = end == items;
        } else {
            std::uint64_t first = at < r.limit ? 0 : at - r.limit;
            for (std::uint64_t i = first; i < at; i++) p.items.emplace_back(i);
            p.next_cursor = first ? cursor_of(first) : std::string();
            p.end_of_source = first == 0;
        }
        items_loaded += p.items.size();
        ++pages;
        return p;
    }
};

static loader::FeedOptions options(std::uint32_t workers) {
    loader::FeedOptions o;
    o.workers = workers;
    o.loader.page_size = 10;
    o.loader.prefetch_distance = 10;
    o.loader.backoff_initial_ms = 1;
    o.loader.backoff_max_ms = 4;
    o.loader.max_auto_retries = 1000;
    return o;
}

static void typed_view_with_throwing_loads() {
    auto src = std::make_shared<Source>();
    src->throw_every = 4;
    {
        loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, options(3));
        feed.set_window(0, 50);
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        auto view = feed.view();
        CHECK(view.size() >= 50);
        for (std::size_t i = 0; i < view.size(); i++) CHECK(view[i].n == i && view[i].label == "item " + std::to_string(i));
        feed.jump(cursor_of(600), 600);
        CHECK(feed.wait_quiescent(std::chrono::milliseconds(20000)));
        std::vector<Item> items = feed.items();
        CHECK(!items.empty() && items.front().n <= 600 && items.back().n >= 649);
        for (std::size_t i = 1; i < items.size(); i++) CHECK(items[i].n == items[i - 1].n + 1);
        CHECK(feed.last_error() != nullptr);
        try {
            std::rethrow_exception(feed.last_error());
        } catch (const std::runtime_error &e) {
            CHECK(std::string(e.what()) == "the source is down");
        }
        CHECK(feed.stats().failed_own > 0);
    }
    CHECK(Item::alive == 0);
}

static void a_bug_in_the_load_is_thrown_by_wait() {
    Source src;
    src.extra = 1;
    loader::Feed<Item> feed([&src](const loader::Read &r) { return src(r); }, options(2));
    feed.set_window(0, 20);
    bool thrown = false;
    try {
        feed.wait_quiescent(std::chrono::seconds(20));
    } catch (const loader::Error &e) {
        thrown = e.code() == LOADER_RESULT_COUNT_OVER_LIMIT;
    }
    CHECK(thrown);
    src.extra = 0;
    feed.retry();
    CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
    CHECK(feed.items().size() >= 20);
    CHECK(feed.close(std::chrono::milliseconds(-1)) == 0);
    CHECK(Item::alive == 0);
    bool refused = false;
    try {
        feed.set_window(0, 10);
    } catch (const loader::Error &e) {
        refused = e.code() == LOADER_RESULT_INVALID_HANDLE;
    }
    CHECK(refused);
}

static void raii_frees_while_loads_run_and_close_lets_a_stuck_load_go() {
    {
        Source src;
        src.size = 100000;
        src.delay_ms = 10;
        loader::Feed<Item> feed([&src](const loader::Read &r) { return src(r); }, options(4));
        feed.set_window(0, 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(15));
        CHECK(src.loads > 0);
    }  // the destructor waits for the loads running
    CHECK(Item::alive == 0);

    auto src = std::make_shared<Source>();
    src->block = true;
    {
        loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, options(2));
        feed.set_window(0, 20);
        while (src->loads == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        CHECK(!feed.wait_quiescent(std::chrono::milliseconds(20)));
        CHECK(feed.close(std::chrono::milliseconds(30)) == 1);
    }
    src->block = false;  // the load returns after its feed is gone: its page is destroyed
    for (int i = 0; i < 5000 && src.use_count() > 1; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(src.use_count() == 1);
    CHECK(Item::alive == 0);
}

// A `compare` that throws counts as "equal" and is kept in last_error(): nothing unwinds into
// the library (which would abort), and the feed still reaches a correct view.
static void a_throwing_compare_is_kept_and_the_feed_goes_on() {
    auto src = std::make_shared<Source>();
    {
        loader::FeedOptions o = options(2);
        o.compare = [](std::string_view, std::string_view) -> int { throw std::logic_error("compare broke"); };
        loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, o);
        feed.set_window(0, 40);
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(feed.last_error() == nullptr);
        feed.invalidate_range(cursor_of(10), cursor_of(20));
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(feed.last_error() != nullptr);
        try {
            std::rethrow_exception(feed.last_error());
        } catch (const std::logic_error &e) {
            CHECK(std::string(e.what()) == "compare broke");
        }
        std::vector<Item> items = feed.items();
        CHECK(items.size() >= 40);
        for (std::size_t i = 0; i < items.size(); i++) CHECK(items[i].n == i);
    }
    CHECK(Item::alive == 0);
}

static void a_negative_wait_waits_as_long_as_it_takes() {
    // As loader_feed_wait_quiescent: a negative timeout waits for ever (it returned false at
    // once, as a zero one does, while loads still ran).
    auto src = std::make_shared<Source>();
    src->delay_ms = 30;
    loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, options(1));
    feed.set_window(0, 50);
    CHECK(feed.wait_quiescent(std::chrono::milliseconds(-1)));
    CHECK(feed.items().size() >= 50);
    feed.set_window(500, 50);
    CHECK(feed.wait_quiescent());
}

static loader_snapshot state_of(const loader::Feed<Item> &feed) {
    loader_snapshot st{};
    st.struct_size = sizeof st;
    CHECK(loader_state(feed.loader(), &st) == LOADER_RESULT_OK);
    return st;
}

// The window is the source's last `len` items, and the typed view holds them in order, up to
// the source's end and no further.
static void check_at_end(const loader::Feed<Item> &feed, const Source &src, std::uint64_t len) {
    std::uint64_t size = src.size;
    loader_snapshot st = state_of(feed);
    if (!(st.window_start == size - len && st.window_len == len && st.end_of_source && st.covered_end == size))
        std::fprintf(stderr, "  %llu items: window [%llu, +%llu), covered to %llu, end %d\n",
                     static_cast<unsigned long long>(size), static_cast<unsigned long long>(st.window_start),
                     static_cast<unsigned long long>(st.window_len), static_cast<unsigned long long>(st.covered_end),
                     static_cast<int>(st.end_of_source));
    CHECK(st.window_start == size - len && st.window_len == len);
    CHECK(st.end_of_source && st.covered_end == size);
    std::vector<Item> items = feed.items();
    CHECK(items.size() >= len && items.back().n == size - 1);
    for (std::size_t i = 1; i < items.size(); i++) CHECK(items[i].n == items[i - 1].n + 1);
}

// Follow mode through Feed<T>: follow() pins the window to the source's last 40 items; after
// each appended() the workers read only the new items and the view ends at the source's end;
// following() says so; a move away unpins and a move back pins again; follow(false) stops;
// a closed feed refuses follow() and appended() with their codes.
static void follow_keeps_the_view_on_the_end() {
    constexpr std::uint64_t window = 40, page = 10, rounds = 30;
    auto src = std::make_shared<Source>();
    src->size = 300;
    {
        loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, options(2));
        feed.set_window(300 - window, window);
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(!feed.following());
        feed.follow();
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(feed.following());
        check_at_end(feed, *src, window);

        auto append = [&](std::uint64_t k) {
            src->size += k;
            feed.appended();
            CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        };
        std::uint64_t before = src->items_loaded, appended = 0;
        for (std::uint64_t round = 0; round < rounds; round++) {
            std::uint64_t k = round * 5 % 14;  // 0 to 13 items: more than a page, or none
            append(k);
            appended += k;
            CHECK(feed.following());
            check_at_end(feed, *src, window);
        }
        std::uint64_t loaded = src->items_loaded - before;
        std::printf("  follow: %llu rounds appended %llu items; the feed read %llu\n",
                    static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(appended),
                    static_cast<unsigned long long>(loaded));
        CHECK(loaded >= appended);
        CHECK(static_cast<double>(loaded) <= 1.05 * static_cast<double>(appended) + static_cast<double>(page * rounds));

        // A move away unpins: the window stays put while the source grows.
        std::uint64_t away = src->size - 200;
        feed.set_window(away, window);
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(!feed.following());
        append(7);
        CHECK(!feed.following());
        CHECK(state_of(feed).window_start == away);
        // Back to the end: pinned again, and the next append moves the window.
        feed.set_window(src->size - window, window);
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(feed.following());
        append(9);
        CHECK(feed.following());
        check_at_end(feed, *src, window);
        // Off: the window stays where it was.
        feed.follow(false);
        CHECK(!feed.following());
        std::uint64_t last_start = src->size - window;
        append(5);
        CHECK(!feed.following());
        CHECK(state_of(feed).window_start == last_start);

        CHECK(feed.close(std::chrono::milliseconds(-1)) == 0);
        auto code_of = [](auto &&call) {
            try {
                call();
            } catch (const loader::Error &e) {
                return e.code();
            }
            return LOADER_RESULT_OK;
        };
        CHECK(code_of([&] { feed.follow(); }) == LOADER_RESULT_INVALID_HANDLE);
        CHECK(code_of([&] { feed.appended(); }) == LOADER_RESULT_INVALID_HANDLE);
        CHECK(code_of([&] { (void)feed.following(); }) == LOADER_RESULT_STALE_HANDLE);
    }
    CHECK(Item::alive == 0);
}

// Feed<T> has what Loader has: state() with the window and what the view covers, explain()
// (with the feed's lines: what the last failing load returned), positions in the pinned view,
// and a `changed` hook that runs after the view changed (its throw kept in last_error()).
static void state_explain_positions_and_changed() {
    auto src = std::make_shared<Source>();
    std::atomic<int> changes{0};
    {
        loader::FeedOptions o = options(2);
        o.changed = [&changes] {
            if (++changes == 1) throw std::runtime_error("changed threw");
        };
        loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, o);
        CHECK(feed.explain().rfind("quiescent", 0) == 0);
        feed.set_window(100, 50);
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        CHECK(changes > 0);
        loader_snapshot st = feed.state();
        CHECK(st.window_start == 100 && st.window_len == 50 && st.quiescent);
        CHECK(st.covered_start <= 100 && st.covered_end >= 150);
        {
            auto view = feed.view();
            CHECK(view.start() == st.covered_start && view.starts().size() == view.pages().size());
            CHECK(!view.revalidating() && view.state().quiescent && view.state().window_start == 100);
            for (std::uint64_t at = 100; at < 150; at++) {
                const Item *item = view.at_position(at);
                CHECK(item != nullptr && item->n == at);
            }
            CHECK(view.at_position(st.covered_end) == nullptr);
            for (std::size_t i = 1; i < view.starts().size(); i++)
                CHECK(view.starts()[i] == view.starts()[i - 1] + view.pages()[i - 1]->size());
        }
        // The hook's throw was kept, and the feed went on.
        CHECK(feed.last_error() != nullptr);
        try {
            std::rethrow_exception(feed.last_error());
        } catch (const std::runtime_error &e) {
            CHECK(std::string(e.what()) == "changed threw");
        }
        CHECK(feed.explain().rfind("quiescent", 0) == 0);
        CHECK(feed.explain().find("feed: 0 loads running") != std::string::npos);
    }
    CHECK(Item::alive == 0);

    // A failing load: explain says what it returned (the wrapper's 1 for a throw).
    auto bad = std::make_shared<Source>();
    bad->throw_every = 1;
    loader::FeedOptions o = options(2);
    o.loader.max_auto_retries = 2;
    loader::Feed<Item> feed([bad](const loader::Read &r) { return (*bad)(r); }, o);
    feed.set_window(0, 20);
    try {
        (void)feed.wait_quiescent(std::chrono::seconds(20));
        CHECK(false);
    } catch (const loader::Error &e) {
        CHECK(e.code() == LOADER_RESULT_RETRIES_SPENT);
    }
    std::string text = feed.explain();
    CHECK(text.find("returned 1; 3 loads failed") != std::string::npos);
    if (failed) std::fprintf(stderr, "  explain:\n%s\n", text.c_str());
    CHECK(feed.counts().failed == 3);
}

// Every page a load returned went back exactly once, checked from Feed::counts() alone: under
// a writer and throwing loads, with pages of loads whose read was let go of while they ran
// (jumps while the loads are blocked). After close() the counts are the final ones.
static void counts_say_each_page_went_back_once() {
    auto src = std::make_shared<Source>();
    src->size = 5000;
    src->throw_pct = 15;
    loader_feed_counts live{}, last{};
    {
        loader::Feed<Item> feed([src](const loader::Read &r) { return (*src)(r); }, options(3));
        std::atomic<bool> stop{false};
        std::atomic<int> writes{0};
        std::thread writer([&] {
            while (!stop) {
                src->size += 3;
                if (++writes % 2) feed.appended(); else feed.invalidate();
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
        for (std::uint64_t round = 0; round < 6; round++) {
            for (std::uint64_t at = 0; at < 300; at += 29) feed.set_window(at + round * 500, 40);
            src->block = true;
            int loads = src->loads;
            feed.jump(cursor_of(3000 + round * 100), 3000 + round * 100);
            while (src->loads == loads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            feed.jump(cursor_of(4000 + round * 100), 4000 + round * 100);
            src->block = false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        stop = true;
        writer.join();
        CHECK(writes > 0);
        src->throw_pct = 0;
        CHECK(feed.wait_quiescent(std::chrono::seconds(20)));
        live = feed.counts();
        // A late load may still run after quiescence: its page is handed out before it goes back.
        CHECK(live.handed_out >= live.accepted + live.given_back && live.handed_out > 0);
        CHECK(feed.close(std::chrono::milliseconds(-1)) == 0);
        last = feed.counts();
        CHECK(feed.counts().handed_out == last.handed_out);  // final: it stays
    }
    CHECK(Item::alive == 0);
    CHECK(last.handed_out >= live.handed_out && last.running == 0);
    CHECK(last.handed_out == last.accepted + last.given_back);
    CHECK(last.accepted == last.released_by_loader);
    CHECK(last.handed_out == src->pages);
    CHECK(last.late > 0 && last.failed > 0 && last.given_back == last.late);
    std::fprintf(stderr, "  counts: handed out %llu accepted %llu given back %llu late %llu by loader %llu pages %llu\n",
                     static_cast<unsigned long long>(last.handed_out), static_cast<unsigned long long>(last.accepted),
                     static_cast<unsigned long long>(last.given_back), static_cast<unsigned long long>(last.late),
                     static_cast<unsigned long long>(last.released_by_loader),
                     static_cast<unsigned long long>(src->pages.load()));
}

int main() {
    a_negative_wait_waits_as_long_as_it_takes();
    typed_view_with_throwing_loads();
    a_bug_in_the_load_is_thrown_by_wait();
    raii_frees_while_loads_run_and_close_lets_a_stuck_load_go();
    a_throwing_compare_is_kept_and_the_feed_goes_on();
    follow_keeps_the_view_on_the_end();
    state_explain_positions_and_changed();
    counts_say_each_page_went_back_once();
    if (failed) {
        std::fprintf(stderr, "cpp_feed_test: FAILED\n");
        return 1;
    }
    std::printf("cpp_feed_test (C++%ld): all checks passed\n", __cplusplus / 100 % 100);
    return 0;
}
