/* fake_compiler.h — the test compiler (see fake_compiler.c for the canned-program format). */
#ifndef TILEC_FAKE_COMPILER_H
#define TILEC_FAKE_COMPILER_H

#include "rt_compiler.h"

const rt_compiler *fake_compiler(void);
/* Compiles done by this process. */
long fake_compiler_compiles(void);

#endif
