/* rt_test.h — the runtime tests' harness: counted checks with exact-message comparison, one test
 * case per process (argv[1] names it, so that process-wide state such as the loaded driver starts
 * fresh), and helpers over the fake driver, the fake compiler and temporary files. */
#ifndef TILEC_RT_TEST_H
#define TILEC_RT_TEST_H

#include "fake_compiler.h"
#include "rt_internal.h"
#include "tilec/runtime.h"

void rt_check_true(int ok, const char *what, const char *file, int line);
void rt_check_status(tilec_status got, tilec_status want, const char *msg, const char *what, const char *file,
                     int line);
void rt_check_str(const char *got, const char *want, const char *what, const char *file, int line);
void rt_check_contains(const char *hay, const char *needle, const char *what, const char *file, int line);

#define CHECK(c) rt_check_true((c) != 0, #c, __FILE__, __LINE__)
#define CHECK_OK(call) rt_check_status((call), TILEC_OK, NULL, #call, __FILE__, __LINE__)
/* the call fails with status st and exactly the message msg */
#define CHECK_ERR(call, st, msg) rt_check_status((call), (st), (msg), #call, __FILE__, __LINE__)
#define CHECK_STR(got, want) rt_check_str((got), (want), #got, __FILE__, __LINE__)
#define CHECK_CONTAINS(hay, needle) rt_check_contains((hay), (needle), #hay, __FILE__, __LINE__)

typedef struct rt_test_case {
    const char *name;
    void (*fn)(void);
} rt_test_case;
#define RT_TEST(fn) {#fn, fn}
/* Runs the case named by argv[1] (all cases without an argument); exit status 1 if a check failed. */
int rt_test_main(int argc, char **argv, const rt_test_case *cases, int ncases);

/* the fake driver (the library that $TILEC_LIBCUDA names) */
void fake_set(const char *env, const char *value); /* setenv (unset for NULL), then reconfigure */
int fake_live(void);                                /* modules + link states + primary-context refs */
long fake_calls(const char *sym);
char *fake_log_text(void);                          /* malloc'd */
void fake_log_clear(void);

/* files */
const char *test_dir(void); /* this process's scratch directory */
char *test_path(const char *name);
char *test_write(const char *name, const char *text); /* returns the path */
char *test_read(const char *path);                    /* NULL if missing */
int test_count(const char *text, const char *needle);

/* a runtime with the fake compiler installed */
tilec_rt *test_rt(unsigned flags, const char *cache_dir);
tilec_rt_library *test_lib(tilec_rt *rt, const char *name, const char *program);
tilec_rt_kernel *test_kernel(tilec_rt_library *lib, const char *kernel, const char *g0, const char *g1);

#endif
