"""Empty pages through the Python binding: a filtered stretch answered with empty pages whose
cursor advances is read across (forward, backward and by a full read; each empty page released
at once); an empty page that repeats its read's cursor without the end flag is a stall that
waits for backoff, never a loop."""

import libloader
from libloader import Answer, Config, Loader

HIDDEN = range(100, 200)  # rows a filter removes from a 300-row source


def scan(read, hidden=HIDDEN, length=300):
    """The filtered keyset query: scan up to ``limit`` rows after the cursor (before it, for
    a backward read: the cursor before the scanned rows, empty at the source's start)."""
    start = int.from_bytes(read.cursor, "big")
    if read.direction is libloader.Direction.BACKWARD:
        lo = max(start - read.limit, 0)
        rows = [r for r in range(lo, start) if r not in hidden]
        return rows, lo.to_bytes(8, "big") if lo else b"", lo == 0
    end = min(start + read.limit, length)
    rows = [r for r in range(start, end) if r not in hidden]
    return rows, end.to_bytes(8, "big"), end == length


def answer(loader, read, hidden=HIDDEN, length=300):
    """Settles ``read`` with the filtered query's answer; returns the loader's verdict."""
    rows, nxt, end = scan(read, hidden, length)
    return loader.settle(read, rows, next_cursor=nxt, end_of_source=end)


def drain(loader, reads, hidden=HIDDEN, length=300, most=10):
    """Answers every read issued until none is left, each one current; returns the reads in
    the order answered. More than ``most`` of them means the loader re-reads a cursor."""
    answered = []
    while reads:
        read = reads.pop(0)
        answered.append(read)
        assert answer(loader, read, hidden, length) == Answer.CURRENT
        assert len(answered) <= most, "the loader re-reads the same cursor"
    return answered


def cursor_of(read):
    return int.from_bytes(read.cursor, "big")


def make():
    reads, released = [], []
    loader = Loader(reads.append, released.append,
                    config=Config(page_size=50, prefetch_distance=0))
    return loader, reads, released


def test_a_filtered_stretch_is_read_across_and_empty_pages_are_released():
    loader, reads, released = make()
    with loader:
        loader.set_window(0, 150)
        cursors = [cursor_of(read) for read in drain(loader, reads)]
        assert cursors == [0, 50, 100, 150, 200]
        view = [row for page in loader.view().pages for row in page.acquisition]
        assert view == list(range(100)) + list(range(200, 250))
        assert released == [[], []], "each empty page is released as soon as it is answered"
        assert loader.state.quiescent
        assert not loader.state.revalidating


def test_an_empty_page_that_repeats_its_cursor_is_a_stall():
    loader, reads, released = make()
    with loader:
        loader.set_window(0, 150)
        answer(loader, reads.pop(0))
        read = reads.pop(0)
        empty = []
        assert loader.settle(read, empty, next_cursor=read.cursor) == Answer.CURSOR_STALLED
        assert released and released[-1] is empty, "the stalled empty page is released"
        assert not reads, "the stalled read is not issued again at once"
        assert loader.state.failure == libloader.Failure.OWN
        deadline = loader.next_deadline()
        assert deadline is not None
        assert loader.stats().cursor_stalls == 1
        loader.tick(deadline)
        assert len(reads) == 1 and reads[0].kind == libloader.Kind.FULL
        while reads:
            answer(loader, reads.pop(0))
        assert not loader.state.revalidating
        assert loader.state.failure == libloader.Failure.NONE


def test_backward_reads_cross_a_filtered_stretch():
    # 1,000 rows with 300..600 filtered: row 700 is at visible position 400.
    hidden = range(300, 600)
    visible = [r for r in range(1000) if r not in hidden]
    loader, reads, released = make()
    with loader:
        loader.jump((700).to_bytes(8, "big"), 400)
        loader.set_window(400, 100)
        backward = []

        def drain_backward():
            answered = drain(loader, reads, hidden, 1000, most=30)
            backward.extend(cursor_of(read) for read in answered
                            if read.direction is libloader.Direction.BACKWARD)

        drain_backward()
        assert not backward
        # Back over the stretch: two pages, six empty ones that move the cursor, one more.
        loader.set_window(250, 250)
        drain_backward()
        assert backward == [700, 650, 600, 550, 500, 450, 400, 350, 300]
        pages = loader.view().pages
        assert [row for page in pages for row in page.acquisition] == visible[250:500]
        assert pages[0].start == 250, "empty pages cost no position"
        assert released.count([]) == 6, "each empty page is released as soon as it is answered"
        assert all(page.acquisition for page in pages)
        assert loader.state.quiescent
        assert not loader.state.revalidating


def test_a_full_read_crosses_a_filtered_stretch():
    loader, reads, released = make()
    with loader:
        loader.set_window(0, 150)
        # The first read fails, and the source changes before the retry: the retry is a full
        # read (with nothing changed it would read the failed page again).
        assert loader.fail(reads.pop(0), 1) == Answer.CURRENT
        loader.invalidate()
        assert loader.state.failure == libloader.Failure.OWN
        assert loader.retry()
        assert [read.kind for read in reads] == [libloader.Kind.FULL]
        answered = drain(loader, reads)
        assert all(read.kind == libloader.Kind.FULL for read in answered)
        cursors = [cursor_of(read) for read in answered]
        assert cursors == [0, 50, 100, 150, 200]
        view = [row for page in loader.view().pages for row in page.acquisition]
        assert view == list(range(100)) + list(range(200, 250))
        assert released.count([]) == 2
        assert loader.state.failure == libloader.Failure.NONE
        assert not loader.state.revalidating
