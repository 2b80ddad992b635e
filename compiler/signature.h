/* signature.h — the launch signature of a compiled specialisation. */
#ifndef TILEC_SIGNATURE_H
#define TILEC_SIGNATURE_H

#include "tir.h"

bool signature_write(StrBuf *out, TKernel *k, DiagEngine *d);

#endif
