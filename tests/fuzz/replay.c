/* replay.c — runs a fuzz target (LLVMFuzzerTestOneInput) over files, without libFuzzer: what
 * CTest does with the inputs the fuzzers found (tests/fuzz/regressions/) in every build, release
 * and sanitizers alike. Arguments: files, or folders whose files are all read. A bug in the
 * compiler aborts, as under the fuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* libFuzzer's byte mutator, which a custom mutator may call: nothing mutates here */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
{
    (void)data;
    (void)max_size;
    return size;
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot read '%s'\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or folder '%s'\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        char **names = NULL;
        int n = 0;
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            names = realloc(names, sizeof(char *) * (size_t)(n + 1));
            names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
            sprintf(names[n++], "%s/%s", argv[i], e->d_name);
        }
        if (d)
            closedir(d);
        qsort(names, (size_t)n, sizeof(char *), cmp);
        for (int k = 0; k < n; k++) {
            bad |= run_file(names[k]);
            count++;
            free(names[k]);
        }
        free(names);
    }
    fprintf(stderr, "replay: %d input(s), none made the compiler fail\n", count);
    return bad;
}
