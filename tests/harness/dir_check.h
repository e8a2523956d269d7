/* dir_check.h - what the tests of atomic writes look for in a folder. */
#ifndef POPC_DIR_CHECK_H
#define POPC_DIR_CHECK_H

/* Entries of dir named like popc's temporaries (".tmp-", ".old-"): a
** write that finished or failed cleanly leaves none. Fails the test when
** dir cannot be opened. */
int dir_temporaries(const char *dir);

#endif /* POPC_DIR_CHECK_H */
