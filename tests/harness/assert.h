/* assert.h - the Check assertions every C test of popc shares: a call
** that must succeed (its status and popc_last_error() on failure) and a
** message that must name something. */
#ifndef POPC_TEST_ASSERT_H
#define POPC_TEST_ASSERT_H

#include <string.h>
#include <check.h>

#include "popc/status.h"

#define ASSERT_OK(expr)                                                      \
    do {                                                                     \
        popc_status st_ = (expr);                                            \
        ck_assert_msg(st_ == POPC_OK, "%s: %s", popc_status_name(st_),       \
                      popc_last_error());                                    \
    } while (0)

#define ASSERT_HAS(hay, needle)                                              \
    ck_assert_msg(strstr((hay), (needle)) != NULL, "'%s' not in: %s",        \
                  (needle), (hay))

#endif /* POPC_TEST_ASSERT_H */
