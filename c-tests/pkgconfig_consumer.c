/* Built against an installed copy through `pkg-config --cflags --libs loader`. */
#include <loader.h>
#include <stdio.h>
#include <string.h>

static void on_issue(void *ud, const loader_read *r) { *(uint64_t *)ud = r->read_id; }
static void on_release(void *ud, loader_acquisition acq) { (void)ud; (void)acq; }

int main(void) {
    uint64_t last = 0;
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_callbacks cb = {sizeof cb, &last, on_issue, on_release, NULL, NULL, NULL, NULL};
    loader_handle h;
    if (loader_config_default(&cfg) || loader_new(&cfg, &cb, &h)) return 1;
    if (loader_set_window(h, 0, 10) || last == 0) return 1;
    if (loader_free(h)) return 1;
    printf("pkg-config consumer: libloader %s, read %llu issued\n", loader_version(), (unsigned long long)last);
    printf("1 passed, 0 failed\n");
    return 0;
}
