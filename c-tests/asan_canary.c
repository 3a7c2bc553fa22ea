/* Built with the same sanitizer flags as the suite; it must be caught. If it is not, the
 * sanitizer is not really linked and the suite's clean run proves nothing. */
#include <stdlib.h>
#include <string.h>

int main(void) {
    char *volatile p = malloc(8);
    memset(p, 0, 9); /* one byte past the end */
    free(p);
    return 0;
}
