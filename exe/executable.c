/* executable.c - the executable file: its container (header, sections with
** CRC32s, whole-file CRC32), writing a compiled model into one and reading
** one back into checked, addressable sections.
**
** Layout (docs/executable-format.md): "POPCEXE\0", u32 format version,
** the popc version string, then sections (u32 tag, u64 length, u32 CRC32
** of tag + length + payload, payload) up to an empty "END" section, then
** the CRC32 of every byte before it. A reader checks the magic and the
** format version (another layout cannot be walked), walks every section
** checking bounds and CRCs, checks the file CRC and only then compares the
** popc version and hands sections out.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "popc/log.h"
#include "popc/executable.h"
#include "popc/model.h"
#include "popc/options.h"
#include "popc/optimizer.h"
#include "popc/registry.h"
#include "popc/version.h"
#include "core/layer/alloc.h"
#include "fileio/atomic_file.h"
#include "core/layer/model.h"
#include "exe/crc32_fast.h"
#include "exe/executable_priv.h"
#include "core/layer/optimizer.h"

static const unsigned char magic[8] = {'P', 'O', 'P', 'C',
                                       'E', 'X', 'E', '\0'};

/* ---- crc ------------------------------------------------------------------ */

static uint32_t section_crc(const unsigned char *head12, const void *payload,
                            size_t n)
{
    return popci_crc32(popci_crc32(0, head12, 12), payload, n);
}

static void tag_text(uint32_t tag, char out[5])
{
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(tag >> (8 * i));
        out[i] = c >= 32 && c < 127 ? (char)c : '?';
    }
    out[4] = '\0';
    /* "END\0" reads better without the trailing '?' */
    if (out[3] == '?' && (tag >> 24) == 0)
        out[3] = '\0';
}

/* ---- the parsed file ------------------------------------------------------- */

#define MAX_SECTIONS 64

typedef struct section {
    uint32_t tag;
    const unsigned char *data;
    size_t len;
    uint32_t crc;
} section;

struct popci_exe {
    char *path;
    unsigned char *file;
    size_t size;
    int mapped;                /* file is an mmap of size bytes */
    const char *version;       /* into file */
    uint32_t format;
    section sec[MAX_SECTIONS];
    int n_sec;
};

void popci_exe_free(popci_exe *x)
{
    if (!x)
        return;
    free(x->path);
    if (x->mapped)
        munmap(x->file, x->size);
    else
        free(x->file);
    free(x);
}

const char *popci_exe_path(const popci_exe *x)
{
    return x->path;
}

const char *popci_exe_popc_version(const popci_exe *x)
{
    return x->version;
}

size_t popci_exe_size(const popci_exe *x)
{
    return x->size;
}

int popci_exe_n_sections(const popci_exe *x)
{
    return x->n_sec;
}

void popci_exe_section_info(const popci_exe *x, int i, char tag[5],
                            size_t *len, uint32_t *crc_out)
{
    tag_text(x->sec[i].tag, tag);
    *len = x->sec[i].len;
    *crc_out = x->sec[i].crc;
}

int popci_exe_section(const popci_exe *x, uint32_t tag, popci_rbuf *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < x->n_sec; i++)
        if (x->sec[i].tag == tag) {
            r->p = x->sec[i].data;
            r->len = x->sec[i].len;
            return 1;
        }
    return 0;
}

popc_status popci_exe_bad(const popci_exe *x, uint32_t tag,
                          const popci_rbuf *r)
{
    char t[5];

    tag_text(tag, t);
    /* a limit is not malformation: the file may be fine, only too big
    ** for the limits in force (popc/limits.h) */
    if (r->why && strstr(r->why, "popc's limit"))
        return popc_set_error(POPC_EUNSUPPORTED, "executable '%s': section "
                              "'%s', at byte %zu: %s; if the file is "
                              "trusted, raise the limit", x->path, t,
                              r->pos, r->why);
    return popc_set_error(POPC_EIO, "executable '%s': section '%s' is "
                          "malformed at byte %zu (%s); the file was not "
                          "written by this popc", x->path, t, r->pos,
                          r->why ? r->why : "missing");
}

/* ---- reading ---------------------------------------------------------------- */

static popc_status read_all(const char *path, unsigned char **data,
                            size_t *size)
{
    FILE *f;
    struct stat sb;
    unsigned char *buf = NULL;
    size_t n;

    *data = NULL;
    *size = 0;
    if (!(f = fopen(path, "rb")))
        return popc_set_error(POPC_EIO, "cannot open executable '%s': %s",
                              path, strerror(errno));
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return popc_set_error(POPC_EIO, "executable '%s' is not a regular "
                              "file", path);
    }
    if (!(buf = popci_malloc((size_t)sb.st_size + 1))) {
        fclose(f);
        return popc_set_error(POPC_ENOMEM, "executable '%s': out of memory "
                              "reading %lld bytes", path,
                              (long long)sb.st_size);
    }
    n = fread(buf, 1, (size_t)sb.st_size, f);
    if (ferror(f) || n != (size_t)sb.st_size) {
        fclose(f);
        free(buf);
        return popc_set_error(POPC_EIO, "cannot read executable '%s': %s",
                              path, strerror(errno ? errno : EIO));
    }
    fclose(f);
    *data = buf;
    *size = n;
    return POPC_OK;
}

static uint32_t get_u32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static uint64_t get_u64(const unsigned char *b)
{
    return (uint64_t)get_u32(b) | (uint64_t)get_u32(b + 4) << 32;
}

/* Walk the sections; with verify 0 only the bounds are checked (the
** caller checks the CRCs of the sections it keeps). */
static popc_status walk(popci_exe *x, int verify)
{
    const unsigned char *b = x->file;
    size_t size = x->size, pos;
    uint32_t vlen;
    char prev[8] = "header", t[5];

    if (size < 12 || memcmp(b, magic, 8) != 0)
        return popc_set_error(POPC_EIO, "'%s' is not a popc executable (no "
                              "POPCEXE magic at the start%s)", x->path,
                              size < 12 ? "; the file is too short" : "");
    x->format = get_u32(b + 8);
    if (x->format != POPCI_EXE_FORMAT)
        return popc_set_error(POPC_EUNSUPPORTED, "executable '%s' has format "
                              "version %u but this popc (%s) reads version "
                              "%u; export it again with this popc", x->path,
                              (unsigned)x->format, POPC_VERSION_STRING,
                              (unsigned)POPCI_EXE_FORMAT);
    pos = 12;
    if (size - pos < 4 || (vlen = get_u32(b + pos)) > 256 ||
        size - pos - 4 < (size_t)vlen + 1)
        return popc_set_error(POPC_EIO, "executable '%s' is truncated: it "
                              "ends inside the header", x->path);
    x->version = (const char *)b + pos + 4;
    if (x->version[vlen] != '\0' || memchr(x->version, '\0', vlen))
        return popc_set_error(POPC_EIO, "executable '%s' is corrupt: the "
                              "version string in the header is damaged",
                              x->path);
    pos += 4 + (size_t)vlen + 1;
    for (;;) {
        section s;
        uint64_t len;

        if (size - pos < 16)
            return popc_set_error(POPC_EIO, "executable '%s' is truncated: "
                                  "it ends after section '%s' (%zu bytes "
                                  "read)", x->path, prev, size);
        s.tag = get_u32(b + pos);
        len = get_u64(b + pos + 4);
        s.crc = get_u32(b + pos + 12);
        tag_text(s.tag, t);
        if (len > size - pos - 16)
            return popc_set_error(POPC_EIO, "executable '%s' is truncated: "
                                  "section '%s' needs %llu bytes but only "
                                  "%zu remain", x->path, t,
                                  (unsigned long long)len, size - pos - 16);
        s.data = b + pos + 16;
        s.len = (size_t)len;
        if (verify && section_crc(b + pos, s.data, s.len) != s.crc)
            return popc_set_error(POPC_EIO, "executable '%s' is corrupt: "
                                  "section '%s' fails its CRC32 check "
                                  "(stored %08x, computed %08x)", x->path, t,
                                  (unsigned)s.crc,
                                  (unsigned)section_crc(b + pos, s.data,
                                                        s.len));
        pos += 16 + s.len;
        if (s.tag == POPCI_SEC_END)
            break;
        if (x->n_sec == MAX_SECTIONS)
            return popc_set_error(POPC_EIO, "executable '%s' is corrupt: "
                                  "more than %d sections", x->path,
                                  MAX_SECTIONS);
        x->sec[x->n_sec++] = s;
        memcpy(prev, t, sizeof t);
    }
    if (size - pos < 4)
        return popc_set_error(POPC_EIO, "executable '%s' is truncated: the "
                              "file checksum after the last section is "
                              "missing", x->path);
    if (verify && popci_crc32(0, b, pos) != get_u32(b + pos))
        return popc_set_error(POPC_EIO, "executable '%s' is corrupt: the "
                              "file checksum does not match (the header or "
                              "the section table is damaged)", x->path);
    if (size - pos != 4)
        return popc_set_error(POPC_EIO, "executable '%s' is corrupt: %zu "
                              "unexpected bytes after the file checksum",
                              x->path, size - pos - 4);
    return POPC_OK;
}

static popc_status same_version(const popci_exe *x)
{
    if (strcmp(x->version, POPC_VERSION_STRING) != 0)
        return popc_set_error(POPC_EUNSUPPORTED, "popc version mismatch: "
                              "File was created with version: %s and this "
                              "is version %s (executable '%s'; export it "
                              "again with this version)", x->version,
                              POPC_VERSION_STRING, x->path);
    return POPC_OK;
}

popc_status popci_exe_read(const char *path, popci_exe **out)
{
    static const uint32_t required[] = {POPCI_SEC_OPTS, POPCI_SEC_PLUG,
                                        POPCI_SEC_GRPH, POPCI_SEC_INPT,
                                        POPCI_SEC_MODL, POPCI_SEC_WGHT,
                                        POPCI_SEC_RNGS, POPCI_SEC_BKND};
    popci_exe *x;
    popc_status st;

    *out = NULL;
    if (!path || !*path)
        return popc_set_error(POPC_EINVAL, "executable: no file name given");
    if (!(x = popci_calloc(1, sizeof *x)) || !(x->path = popci_strdup(path))) {
        free(x);
        return popc_set_error(POPC_ENOMEM, "executable '%s': out of memory",
                              path);
    }
    if ((st = read_all(path, &x->file, &x->size)) != POPC_OK ||
        (st = walk(x, 1)) != POPC_OK || (st = same_version(x)) != POPC_OK)
        goto fail;
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        popci_rbuf r;
        char t[5];

        if (popci_exe_section(x, required[i], &r))
            continue;
        tag_text(required[i], t);
        st = popc_set_error(POPC_EIO, "executable '%s' is incomplete: "
                            "section '%s' is missing", path, t);
        goto fail;
    }
    *out = x;
    return POPC_OK;
fail:
    popci_exe_free(x);
    return st;
}

static popc_status map_file(popci_exe *x)
{
    struct stat sb;
    void *p;
    int fd = open(x->path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return popc_set_error(POPC_EIO, "cannot open executable '%s': %s",
                              x->path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0) {
        close(fd);
        return popc_set_error(POPC_EIO, "executable '%s' is not a regular "
                              "file with contents", x->path);
    }
    p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return popc_set_error(POPC_EIO, "cannot map executable '%s': %s",
                              x->path, strerror(errno));
    x->file = p;
    x->size = (size_t)sb.st_size;
    x->mapped = 1;
    return POPC_OK;
}

/* Keep the sections named in tags, each checked by its CRC32. */
static popc_status keep_sections(popci_exe *x, const uint32_t *tags, int n)
{
    int kept = 0;

    for (int i = 0; i < x->n_sec; i++) {
        const section *s = &x->sec[i];
        int wanted = 0;
        char t[5];

        for (int k = 0; k < n; k++)
            wanted |= tags[k] == s->tag;
        if (!wanted)
            continue;
        tag_text(s->tag, t);
        /* the 12 bytes before the CRC field: tag and length */
        if (section_crc(s->data - 16, s->data, s->len) != s->crc)
            return popc_set_error(POPC_EIO, "executable '%s' is corrupt: "
                                  "section '%s' fails its CRC32 check",
                                  x->path, t);
        x->sec[kept++] = *s;
    }
    x->n_sec = kept;
    for (int k = 0; k < n; k++) {
        popci_rbuf r;
        char t[5];

        if (popci_exe_section(x, tags[k], &r))
            continue;
        tag_text(tags[k], t);
        return popc_set_error(POPC_EIO, "executable '%s' is incomplete: "
                              "section '%s' is missing", x->path, t);
    }
    return POPC_OK;
}

popc_status popci_exe_read_sections(const char *path, const uint32_t *tags,
                                    int n, popci_exe **out)
{
    popci_exe *x;
    popc_status st;

    *out = NULL;
    if (!path || !*path)
        return popc_set_error(POPC_EINVAL, "executable: no file name given");
    if (!(x = popci_calloc(1, sizeof *x)) || !(x->path = popci_strdup(path))) {
        free(x);
        return popc_set_error(POPC_ENOMEM, "executable '%s': out of memory",
                              path);
    }
    if ((st = map_file(x)) != POPC_OK || (st = walk(x, 0)) != POPC_OK ||
        (st = same_version(x)) != POPC_OK ||
        (st = keep_sections(x, tags, n)) != POPC_OK) {
        popci_exe_free(x);
        return st;
    }
    *out = x;
    return POPC_OK;
}

/* ---- small readers shared by load and describe -------------------------- */

uint64_t popci_exe_key(const popci_exe *x)
{
    popci_rbuf r;
    popci_exe_modl m;

    if (!popci_exe_section(x, POPCI_SEC_MODL, &r) ||
        popci_exe_read_modl(&r, &m) != POPC_OK)
        return 0;
    return m.key;
}

double popci_exe_compile_time(const popci_exe *x)
{
    popci_rbuf r;
    popci_exe_modl m;

    if (!popci_exe_section(x, POPCI_SEC_MODL, &r) ||
        popci_exe_read_modl(&r, &m) != POPC_OK)
        return 0.0;
    return m.compile_time;
}

popc_status popci_exe_check_plugins(const popci_exe *x)
{
    popc_registry *reg;
    popci_rbuf r;
    uint32_t n;
    popc_status st;

    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    popci_exe_section(x, POPCI_SEC_PLUG, &r);
    n = popci_r_count(&r, 10);
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        const char *name = popci_r_str(&r), *version = popci_r_str(&r);
        int found = 0;

        popci_r_u32(&r); /* what it provides: informational */
        if (r.bad)
            break;
        for (int p = 0; p < popc_registry_plugin_count(reg); p++) {
            popc_plugin_record rec = popc_registry_plugin_at(reg, p);
            if (strcmp(rec.name, name) != 0)
                continue;
            found = 1;
            if (strcmp(rec.version, version) != 0)
                return popc_set_error(POPC_EUNSUPPORTED, "executable '%s': "
                                      "plugin '%s' version mismatch: File "
                                      "was created with version: %s and the "
                                      "loaded plugin (%s) is version %s",
                                      x->path, name, version, rec.path,
                                      rec.version);
        }
        if (!found)
            return popc_set_error(POPC_ENOTFOUND, "executable '%s' needs "
                                  "plugin '%s' (version %s), which is not "
                                  "loaded; check POPC_PLUGIN_PATH and `popc "
                                  "plugins`", x->path, name, version);
    }
    if (r.bad)
        return popci_exe_bad(x, POPCI_SEC_PLUG, &r);
    return POPC_OK;
}

/* ---- writing ---------------------------------------------------------------- */

static void add_section(popci_wbuf *f, uint32_t tag, const popci_wbuf *s)
{
    unsigned char head[12];
    size_t len = s ? s->len : 0;

    for (int i = 0; i < 4; i++)
        head[i] = (unsigned char)(tag >> (8 * i));
    for (int i = 0; i < 8; i++)
        head[4 + i] = (unsigned char)((uint64_t)len >> (8 * i));
    popci_w_bytes(f, head, 12);
    popci_w_u32(f, section_crc(head, s ? s->buf : NULL, len));
    if (len)
        popci_w_bytes(f, s->buf, len);
}

/* mkdir -p of the directory part of path. */
static popc_status make_parents(const char *path)
{
    char *dir = popci_strdup(path);
    popc_status st = POPC_OK;

    if (!dir)
        return popc_set_error(POPC_ENOMEM, "save: out of memory");
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            st = popc_set_error(POPC_EIO, "cannot create directory '%s' for "
                                "'%s': %s", dir, path, strerror(errno));
            break;
        }
        *p = '/';
    }
    free(dir);
    return st;
}

popc_status popci_exe_write_file(const char *path, const void *data,
                                 size_t size)
{
    popc_status st;

    if ((st = make_parents(path)) != POPC_OK)
        return st;
    return popci_write_file_atomic(path, data, size);
}

popc_status popci_exe_write(popc_model *m, const char *path, uint64_t key,
                            double compile_time)
{
    static const uint32_t order[] = {
        POPCI_SEC_OPTS, POPCI_SEC_PLUG, POPCI_SEC_MODL, POPCI_SEC_GRPH,
        POPCI_SEC_CGRF, POPCI_SEC_INPT, POPCI_SEC_OPTM, POPCI_SEC_WGHT,
        POPCI_SEC_OSTA, POPCI_SEC_RNGS, POPCI_SEC_BKND};
    enum { N = sizeof order / sizeof order[0] };
    popci_wbuf s[N], f = {0};
    popc_status st;

    memset(s, 0, sizeof s);
    if ((st = popci_model_sync_host(m)) != POPC_OK)
        return st;
    for (int i = 0; i < N && st == POPC_OK; i++)
        st = popci_exe_encode(m, order[i], key, compile_time, &s[i]);
    if (st != POPC_OK)
        goto done;
    popci_w_bytes(&f, magic, sizeof magic);
    popci_w_u32(&f, POPCI_EXE_FORMAT);
    popci_w_str(&f, POPC_VERSION_STRING);
    for (int i = 0; i < N; i++)
        if (s[i].len || order[i] != POPCI_SEC_CGRF)
            add_section(&f, order[i], &s[i]);
    add_section(&f, POPCI_SEC_END, NULL);
    popci_w_u32(&f, popci_crc32(0, f.buf, f.len));
    for (int i = 0; i < N; i++)
        if (s[i].oom)
            f.oom = 1;
    if (f.oom) {
        st = popc_set_error(POPC_ENOMEM, "saving '%s': out of memory", path);
        goto done;
    }
    st = popci_exe_write_file(path, f.buf, f.len);
done:
    for (int i = 0; i < N; i++)
        popci_wbuf_free(&s[i]);
    popci_wbuf_free(&f);
    return st;
}
