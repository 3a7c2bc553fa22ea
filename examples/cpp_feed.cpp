// cpp_feed.cpp: a threaded C++ host over an in-memory ordered source, through the header-only
// wrapper bindings/cpp/loader.hpp.
//
// The source is a keyset-paginated table (key -> text); a cursor is a position between rows,
// named by the key of the row just before it (empty: the source's start). A forward read
// returns the rows after it, a backward read those up to and including that row. The
// loader's `issue` callback queues each read; four worker threads take reads in random order,
// sleep a little, read the table, and answer from their own thread, so answers arrive out of
// order. Some reads fail (a simulated timeout) and are retried on the loader's backoff, which
// the main thread drives with `tick`. The main thread moves the window, changes the table and
// invalidates (once while reads are in flight, so some answers come back stale), and after
// each step waits until the loader is quiet, then checks that the view it reads is a run of
// the table's rows covering the window. At the end it frees the loader
// and checks that every page it handed over was released exactly once.
//
//   make cpp-example       builds and runs it (under ASan+UBSan)
//   c++ -std=c++17 examples/cpp_feed.cpp $(pkg-config --cflags --libs loader) -pthread
//                          against an installed libloader (make install)
#include <loader.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using Row = std::pair<std::uint64_t, std::string>;

std::string key_cursor(std::uint64_t key) {
    std::string c(8, '\0');
    for (int i = 7; i >= 0; i--, key >>= 8) c[std::size_t(i)] = char(key & 0xff);
    return c;
}

std::uint64_t cursor_key(const std::string &c) {
    std::uint64_t key = 0;
    for (char b : c) key = (key << 8) | std::uint8_t(b);
    return key;
}

// The ordered source: rows by unique key, changed under the loader's feet.
class Table {
public:
    void put(std::uint64_t key, std::string text) {
        std::lock_guard<std::mutex> g(m_);
        rows_[key] = std::move(text);
    }
    void erase(std::uint64_t key) {
        std::lock_guard<std::mutex> g(m_);
        rows_.erase(key);
    }
    // Up to `limit` rows after `cursor` (from the start when it is empty).
    std::vector<Row> read(const std::string &cursor, std::uint32_t limit, bool *end) const {
        std::lock_guard<std::mutex> g(m_);
        auto it = cursor.empty() ? rows_.begin() : rows_.upper_bound(cursor_key(cursor));
        std::vector<Row> out;
        for (; it != rows_.end() && out.size() < limit; ++it) out.push_back(*it);
        *end = it == rows_.end();
        return out;
    }
    // Up to `limit` rows just before `cursor`, in key order; `*next` is the cursor just before
    // the first of them, and `*start` says it is the source's start (then `*next` is empty).
    std::vector<Row> read_backward(const std::string &cursor, std::uint32_t limit, std::string *next,
                                   bool *start) const {
        std::lock_guard<std::mutex> g(m_);
        auto it = cursor.empty() ? rows_.begin() : rows_.upper_bound(cursor_key(cursor));
        std::vector<Row> out;
        for (; it != rows_.begin() && out.size() < limit;) out.push_back(*--it);
        std::reverse(out.begin(), out.end());
        *start = it == rows_.begin();
        *next = *start ? std::string() : key_cursor(std::prev(it)->first);
        return out;
    }
    std::vector<Row> all() const {
        std::lock_guard<std::mutex> g(m_);
        return {rows_.begin(), rows_.end()};
    }

private:
    mutable std::mutex m_;
    std::map<std::uint64_t, std::string> rows_;
};

// What an acquisition names: the rows one answer carried. The loader holds the pointer.
struct Page {
    std::uint64_t id;
    std::vector<Row> rows;
};

// The host: the read queue, the workers, and the pages handed to the loader.
class Host {
public:
    explicit Host(const Table &table) : table_(table) {}

    loader::Callbacks callbacks() {
        return {[this](const loader::Read &r) { enqueue(r); },
                [this](loader::Acquisition a) { release(reinterpret_cast<Page *>(a)); },
                [this] { changed(); },
                [this](std::uint64_t) { cancels_++; }};
    }

    void start(loader::Loader &l, int workers) {
        for (int i = 0; i < workers; i++) threads_.emplace_back([this, &l, i] { work(l, unsigned(i)); });
    }
    void stop() {
        {
            std::lock_guard<std::mutex> g(m_);
            stopping_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_) t.join();
        threads_.clear();
    }

    bool idle() {
        std::lock_guard<std::mutex> g(m_);
        return queue_.empty();
    }
    // Sleeps until the loader reports a change, or `ms` passed.
    void wait_changed(int ms) {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait_for(g, std::chrono::milliseconds(ms), [this] { return changed_; });
        changed_ = false;
    }

    // Every page the loader accepted was released exactly once, and none is left.
    bool released_exactly_once() {
        std::lock_guard<std::mutex> g(m_);
        return double_release_ == 0 && released_ == accepted_ && live_ == 0;
    }
    std::uint64_t accepted() {
        std::lock_guard<std::mutex> g(m_);
        return accepted_;
    }
    std::uint64_t failures() {
        std::lock_guard<std::mutex> g(m_);
        return failures_;
    }
    std::uint64_t cancels() const { return cancels_; }

private:
    void enqueue(const loader::Read &r) {
        {
            std::lock_guard<std::mutex> g(m_);
            queue_.push_back(r);
        }
        cv_.notify_all();
    }
    void changed() {
        {
            std::lock_guard<std::mutex> g(m_);
            changed_ = true;
        }
        cv_.notify_all();
    }
    void release(Page *p) {
        std::lock_guard<std::mutex> g(m_);
        if (released_ids_[p->id]++ != 0) {
            double_release_++;  // never deleted twice
            return;
        }
        released_++;
        live_--;
        delete p;
    }

    // A worker: takes a random queued read (so answers come out of order), reads the table
    // and answers from this thread.
    void work(loader::Loader &l, unsigned seed) {
        std::mt19937 rng(seed + 1);
        for (;;) {
            loader::Read r;
            {
                std::unique_lock<std::mutex> g(m_);
                cv_.wait(g, [this] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) return;
                std::size_t pick = rng() % queue_.size();
                r = std::move(queue_[pick]);
                queue_.erase(queue_.begin() + std::ptrdiff_t(pick));
            }
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
            if (rng() % 12 == 0) {
                {
                    std::lock_guard<std::mutex> g(m_);
                    failures_++;
                }
                l.fail(r.read_id, 504);  // a timeout: the loader retries after a backoff
                continue;
            }
            bool end = false;
            auto page = std::make_unique<Page>();
            std::string next;
            if (r.direction == LOADER_DIRECTION_BACKWARD) {
                page->rows = table_.read_backward(r.cursor, r.limit, &next, &end);
            } else {
                page->rows = table_.read(r.cursor, r.limit, &end);
                // The cursor after the last row looked at; unchanged for an empty page at the end.
                next = page->rows.empty() ? r.cursor : key_cursor(page->rows.back().first);
            }
            std::uint32_t count = std::uint32_t(page->rows.size());
            {
                std::lock_guard<std::mutex> g(m_);
                page->id = next_id_++;
                live_++;
            }
            Page *raw = page.release();
            try {
                l.settle(r.read_id, reinterpret_cast<loader::Acquisition>(raw), count, next, end);
                std::lock_guard<std::mutex> g(m_);
                accepted_++;  // the loader owns `raw` now, and will release it exactly once
            } catch (const loader::Error &) {
                // Refused (this host's callbacks never throw, so the error is the call's own):
                // the loader accepted nothing, and the page is still ours.
                std::lock_guard<std::mutex> g(m_);
                live_--;
                delete raw;
            }
        }
    }

    const Table &table_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<loader::Read> queue_;
    std::vector<std::thread> threads_;
    bool stopping_ = false;
    bool changed_ = false;
    std::uint64_t next_id_ = 1, accepted_ = 0, released_ = 0, live_ = 0, double_release_ = 0, failures_ = 0;
    std::map<std::uint64_t, int> released_ids_;
    std::atomic<std::uint64_t> cancels_{0};
};

std::uint64_t now_ms() {
    using namespace std::chrono;
    return std::uint64_t(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

// Drives the backoff clock until the loader is quiescent: no read outstanding, nothing owed,
// no failure waiting, the view current.
bool wait_quiet(loader::Loader &l, Host &host) {
    const std::uint64_t give_up = now_ms() + 20000;
    for (;;) {
        l.tick(now_ms());
        loader_snapshot s = l.state();
        if (s.quiescent && host.idle()) return true;
        // Automatic retries are capped; past the cap a host retries itself.
        if (s.failure == LOADER_FAILURE_OWN && !l.next_deadline()) l.retry();
        if (now_ms() > give_up) return false;
        host.wait_changed(5);
    }
}

// Reads the view and checks it is a run of the table's consecutive rows, one per position of
// the covered range, and covers the window. Positions are anchored: a repair keeps the
// numbers the view had, so rows inserted or deleted above the view do not move it, and the
// run need not start at the table's row `covered_start`. The view is pinned: no page it lists
// is released (its Page deleted) until it goes, whichever thread's call lets go of one, so
// reading the pages is safe at any time; comparing them with the table needs the loader
// quiescent.
bool view_matches(const loader::Loader &l, const Table &table, const char *step) {
    loader::PinnedView v = l.pin_view();
    const loader_snapshot &s = v.state();
    std::vector<Row> shown;
    for (const loader_page &p : v.pages()) {
        const Page *page = reinterpret_cast<const Page *>(p.acquisition);
        if (page->rows.size() != p.count) return false;
        shown.insert(shown.end(), page->rows.begin(), page->rows.end());
    }
    std::vector<Row> rows = table.all();
    auto first = shown.empty() ? rows.begin() : std::find(rows.begin(), rows.end(), shown.front());
    bool ok = shown.size() == s.covered_end - s.covered_start &&
              std::size_t(rows.end() - first) >= shown.size() && std::equal(shown.begin(), shown.end(), first) &&
              s.covered_start <= s.window_start &&
              (s.end_of_source || s.covered_end >= s.window_start + s.window_len);
    std::printf("%-26s %zu pages, positions [%llu, %llu), table rows from %lld, epoch %llu: %s\n", step,
                v.pages().size(), (unsigned long long)s.covered_start, (unsigned long long)s.covered_end,
                (long long)(first - rows.begin()), (unsigned long long)s.epoch,
                ok ? "equals the table" : "DIFFERS from the table");
    if (!shown.empty())
        std::printf("%-26s first %llu \"%s\", last %llu \"%s\"\n", "", (unsigned long long)shown.front().first,
                    shown.front().second.c_str(), (unsigned long long)shown.back().first, shown.back().second.c_str());
    return ok;
}

}  // namespace

int main() {
    Table table;
    for (std::uint64_t k = 10; k <= 1000; k += 10) table.put(k, "row " + std::to_string(k));

    Host host(table);
    bool ok = true;
    {
        loader::Config cfg;
        cfg.page_size = 8;
        cfg.prefetch_distance = 8;
        cfg.backoff_initial_ms = 2;
        cfg.backoff_max_ms = 20;
        loader::Loader l(host.callbacks(), cfg);
        host.start(l, 4);

        l.set_window(0, 30);
        ok = wait_quiet(l, host) && view_matches(l, table, "first window") && ok;

        // Scroll, and while those reads are in flight the table changes near the top (three
        // inserts and a delete): the answers already under way come back stale. The old view
        // stays visible, marked revalidating, until the repair commits.
        l.set_window(40, 30);
        for (std::uint64_t k : {15, 25, 35}) table.put(k, "new row " + std::to_string(k));
        table.erase(50);
        l.invalidate();
        // Pinned, the old view's pages stay readable while the workers repair it.
        loader::PinnedView old = l.pin_view();
        std::printf("%-26s revalidating: %s, %zu old pages pinned\n", "scrolled, invalidated",
                    old.revalidating() ? "yes" : "no", old.pages().size());
        ok = wait_quiet(l, host) && view_matches(l, table, "after the repair") && ok;
        if (!old.pages().empty()) {
            const Page *first = reinterpret_cast<const Page *>(old.pages()[0].acquisition);
            std::printf("%-26s its first row still reads %llu \"%s\"\n", "the old view, replaced,",
                        (unsigned long long)first->rows.front().first, first->rows.front().second.c_str());
        }
        old.release();  // the releases the pin deferred are made now

        // A change while quiet: a repair over everything the view covers.
        table.put(5, "new first row");
        table.erase(400);
        l.invalidate();
        ok = wait_quiet(l, host) && view_matches(l, table, "after a second change") && ok;

        loader_counts c = l.stats();
        std::printf("reads: %llu finite, %llu chain, %llu full; answers: %llu current, %llu stale; "
                    "%llu failed (%llu own), %llu retries; %llu cancel hints\n",
                    (unsigned long long)c.issued_finite, (unsigned long long)c.issued_chain,
                    (unsigned long long)c.issued_full, (unsigned long long)c.answered_current,
                    (unsigned long long)c.answered_stale, (unsigned long long)host.failures(),
                    (unsigned long long)c.failed_own, (unsigned long long)(c.retries_auto + c.retries_explicit),
                    (unsigned long long)host.cancels());
        host.stop();  // the loader is quiet: no read is queued
    }  // the destructor frees the loader: every page it still holds comes back
    bool once = host.released_exactly_once();
    std::printf("%llu pages accepted, every one released exactly once: %s\n", (unsigned long long)host.accepted(),
                once ? "yes" : "NO");
    return ok && once ? 0 : 1;
}
