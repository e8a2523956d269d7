/* utf8.c - refuse text files that are not UTF-8, naming the line.
**
** libini_config rejects such input with a generic failure that used to
** surface as "out of memory"; checking first gives the user the file, the
** line and the column of the first bad byte.
*/
#include "config.h"

#include <stddef.h>
#include "optfmt/optfmt.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0.
** Overlong forms, surrogates and code points above U+10FFFF are invalid. */
static size_t sequence_length(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (len > n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

popc_status popci_check_utf8(const char *name, int first_line,
                             const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, line_start = 0;
    int line = first_line;

    while (i < len) {
        size_t k = sequence_length(s + i, len - i);

        if (k == 0)
            return popc_set_error(POPC_ECONFIG, "%s:%d: invalid UTF-8 (byte "
                                  "0x%02X at column %zu); save the file as "
                                  "UTF-8 text", name, line, s[i],
                                  i - line_start + 1);
        if (s[i] == '\n') {
            line++;
            line_start = i + 1;
        }
        i += k;
    }
    return POPC_OK;
}
