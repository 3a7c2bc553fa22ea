// The C++ wrapper built against an installed copy through `pkg-config --cflags --libs loader`:
// loader.hpp is installed beside loader.h, so the .pc's Cflags find both.
#include <loader.hpp>

#include <cstdio>

int main() {
    std::uint64_t first = 0;
    int issued = 0, released = 0;
    {
        loader::Loader l({[&](const loader::Read &r) {
                              if (issued++ == 0) first = r.read_id;
                          },
                          [&](loader::Acquisition) { released++; }});
        l.set_window(0, 10);
        if (issued != 1) return 1;
        if (l.settle(first, 1, 10, "cursor", false) != LOADER_ANSWER_CURRENT) return 1;
    }
    if (released != 1) return 1;
    std::printf("pkg-config C++ consumer: libloader %s, read %llu answered, %d reads issued, "
                "its page released\n",
                loader_version(), (unsigned long long)first, issued);
    std::printf("1 passed, 0 failed\n");
    return 0;
}
