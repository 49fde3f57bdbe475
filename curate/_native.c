/* Compiled kernels of the curation statistics (module curate._native).
 *
 * Each function computes exactly what a Python definition in curate/ computes (that definition
 * stays the reference: curate/native.py selects between them, tests/curate/test_native.py
 * requires equal results). Integer arithmetic only, no CPU-specific code, so the results are the
 * same on every x86-64 machine; the one exception, ft_predict, does fastText's own float
 * operations in fastText's order (IEEE single precision, no FMA) and gives fastText's bits
 * (tests/curate/test_ftpredict.py).
 *
 *   token_ids(tokens, index)     ids of whitespace tokens in a dict or a token table, -1 where absent
 *   tok_add(table, arena, ...)   new tokens into a token table (a hash table of str -> id in bytearrays)
 *   tok_put(table, arena, ...)   new tokens into a token table with the values given
 *   word_ids(text, index, other) ids of the matches of [^\W\d_]+(?:'[^\W\d_]+)? in text
 *   unique_counts(values)        np.unique(values, return_counts=True) of an int64 buffer
 *   rep_ngram_cover(ids, n)      tokens covered by an n-gram that occurs twice or more
 *   word_hashes(text, cache)     cached 64-bit hashes of the matches of \w+ in text (decontamination); the
 *                                cache a dict or a token table (tok_put)
 *   utf8_len(text)               len(text.encode("utf-8", "surrogatepass")), without encoding
 *   str_table(index)             a dict of str -> int as a read-only hash table in a bytes object, which
 *                                word_ids reads in place of the dict (no str object made per word)
 *   ft_model(...), ft_predict(model, text)
 *                                fastText's supervised predict (curate/ftpredict.py): lid.176.ftz, the
 *                                quality classifier
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

/* Python's character classes (str.isalpha() and the others of one character), with the ASCII
 * answers inline: the same values as the Py_UNICODE_IS* functions for every code point */
static inline int u_isalpha(Py_UCS4 c) { return c < 128 ? (c | 32) >= 'a' && (c | 32) <= 'z' : Py_UNICODE_ISALPHA(c); }
static inline int u_isdecimal(Py_UCS4 c) { return c < 128 ? c >= '0' && c <= '9' : Py_UNICODE_ISDECIMAL(c); }
static inline int u_isalnum(Py_UCS4 c) { return c < 128 ? u_isalpha(c) || u_isdecimal(c) : Py_UNICODE_ISALNUM(c); }
static inline int u_islower(Py_UCS4 c) { return c < 128 ? c >= 'a' && c <= 'z' : Py_UNICODE_ISLOWER(c); }
static inline int u_isupper(Py_UCS4 c) { return c < 128 ? c >= 'A' && c <= 'Z' : Py_UNICODE_ISUPPER(c); }
static inline int u_istitle(Py_UCS4 c) { return c < 128 ? 0 : Py_UNICODE_ISTITLE(c); }

/* ------------------------------------------------------------------------------- buffers */

/* A read-only view of a C-contiguous one-dimensional buffer of 8-byte integers. */
static int get_int64(PyObject *obj, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (view->itemsize != 8 || view->ndim > 1 || !(f[0] == 'q' || f[0] == 'l' || f[0] == 'Q' || f[0] == 'L')
        || f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-D buffer of 8-byte integers", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *new_int64(Py_ssize_t n, int64_t **data) {
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * 8);
    if (out) *data = (int64_t *)PyByteArray_AS_STRING(out);
    return out;
}

/* ------------------------------------------------------------------------------- string hashing */

/* A slot of a hash table of strings: the key's hash (0: an empty slot), its id, where its code
 * points start in the table's arena and how many there are. */
typedef struct {
    uint64_t h;
    int64_t id;
    uint32_t off;
    uint32_t len;
} st_slot;

static inline uint64_t cp_hash(int kind, const void *data, Py_ssize_t i, Py_ssize_t j) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the code points, then a final mix */
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        for (Py_ssize_t k = i; k < j; k++) {
            h ^= (uint64_t)p[k];
            h *= 1099511628211ULL;
        }
    } else {
        for (Py_ssize_t k = i; k < j; k++) {
            h ^= (uint64_t)PyUnicode_READ(kind, data, k);
            h *= 1099511628211ULL;
        }
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h ? h : 1;
}

/* The slot of text[i:j] among nslots (a power of two), or -1; cps: the arena of arena code points. */
static inline Py_ssize_t slot_of(const st_slot *slots, uint64_t nslots, const uint32_t *cps, uint64_t arena,
                                 uint64_t h, int kind, const void *data, Py_ssize_t i, Py_ssize_t j) {
    uint64_t s = h & (nslots - 1), len = (uint64_t)(j - i);
    for (uint64_t probes = 0; probes < nslots && slots[s].h; probes++, s = (s + 1) & (nslots - 1)) {
        const st_slot *e = &slots[s];
        if (e->h != h || e->len != len || (uint64_t)e->off + len > arena) continue;
        const uint32_t *key = cps + e->off;
        Py_ssize_t q = 0;
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *p = (const Py_UCS1 *)data + i;
            while (q < (Py_ssize_t)len && key[q] == (uint32_t)p[q]) q++;
        } else {
            while (q < (Py_ssize_t)len && key[q] == (uint32_t)PyUnicode_READ(kind, data, i + q)) q++;
        }
        if (q == (Py_ssize_t)len) return (Py_ssize_t)s;
    }
    return -1;
}

/* ------------------------------------------------------------------------------- token tables */

/* A growing table of str -> id for the token table of curate.textstats: the slots in one bytearray
 * (a header of the slot count, a power of two, and the key count; then the slots), the keys' code
 * points in another. Read by token_ids in place of a dict; tok_add inserts new keys. */
typedef struct {
    uint64_t nslots, count;
} tok_header;

static int tok_view(PyObject *table, PyObject *arena, tok_header **hdr, st_slot **slots, uint32_t **cps,
                    uint64_t *n_cps) {
    if (!PyByteArray_Check(table) || !PyByteArray_Check(arena)) {
        PyErr_SetString(PyExc_TypeError, "token table: expected two bytearrays");
        return -1;
    }
    Py_ssize_t tl = PyByteArray_GET_SIZE(table), al = PyByteArray_GET_SIZE(arena);
    if (tl < (Py_ssize_t)sizeof(tok_header) || al % 4) goto bad;
    *hdr = (tok_header *)PyByteArray_AS_STRING(table);
    uint64_t ns = (*hdr)->nslots;
    if (ns == 0 || (ns & (ns - 1)) || (uint64_t)(tl - sizeof(tok_header)) / sizeof(st_slot) != ns
        || (uint64_t)tl != sizeof(tok_header) + ns * sizeof(st_slot) || (*hdr)->count >= ns)
        goto bad;
    *slots = (st_slot *)(PyByteArray_AS_STRING(table) + sizeof(tok_header));
    *cps = (uint32_t *)PyByteArray_AS_STRING(arena);
    *n_cps = (uint64_t)al / 4;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "not a token table made by tok_add");
    return -1;
}

/* Every token of the list (distinct, none in the table) into the table, with the id first + its
 * position, or values[position] where values is given; an empty table bytearray is made a table. */
static PyObject *tok_insert(PyObject *table, PyObject *arena, PyObject *tokens, long long first,
                            const int64_t *values) {
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    if (PyByteArray_GET_SIZE(table) == 0) {
        if (PyByteArray_Resize(table, sizeof(tok_header) + 1024 * sizeof(st_slot)) < 0) return NULL;
        memset(PyByteArray_AS_STRING(table), 0, PyByteArray_GET_SIZE(table));
        ((tok_header *)PyByteArray_AS_STRING(table))->nslots = 1024;
    }
    tok_header *hdr;
    st_slot *slots;
    uint32_t *cps;
    uint64_t n_cps, need_cps = 0;
    if (tok_view(table, arena, &hdr, &slots, &cps, &n_cps) < 0) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tok = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_Check(tok)) {
            PyErr_SetString(PyExc_TypeError, "tok_add: expected a list of str");
            return NULL;
        }
        need_cps += (uint64_t)PyUnicode_GET_LENGTH(tok);
    }
    if (n_cps + need_cps > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "tok_add: the token table's keys are too long");
        return NULL;
    }
    uint64_t count = hdr->count, ns = hdr->nslots;
    if (2 * (count + (uint64_t)n) + 2 > ns) { /* at most half full: grow and rehash */
        uint64_t grown = ns;
        while (2 * (count + (uint64_t)n) + 2 > grown) grown <<= 1;
        st_slot *old = PyMem_Malloc(ns * sizeof(st_slot));
        if (!old) return PyErr_NoMemory();
        memcpy(old, slots, ns * sizeof(st_slot));
        if (PyByteArray_Resize(table, sizeof(tok_header) + grown * sizeof(st_slot)) < 0) {
            PyMem_Free(old);
            return NULL;
        }
        hdr = (tok_header *)PyByteArray_AS_STRING(table);
        slots = (st_slot *)(PyByteArray_AS_STRING(table) + sizeof(tok_header));
        memset(slots, 0, grown * sizeof(st_slot));
        hdr->nslots = grown;
        for (uint64_t k = 0; k < ns; k++) {
            if (!old[k].h) continue;
            uint64_t s = old[k].h & (grown - 1);
            while (slots[s].h) s = (s + 1) & (grown - 1);
            slots[s] = old[k];
        }
        PyMem_Free(old);
        ns = grown;
    }
    if (PyByteArray_Resize(arena, (Py_ssize_t)(4 * (n_cps + need_cps))) < 0) return NULL;
    cps = (uint32_t *)PyByteArray_AS_STRING(arena);
    uint64_t used = n_cps;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tok = PyList_GET_ITEM(tokens, i);
        int kind = PyUnicode_KIND(tok);
        const void *d = PyUnicode_DATA(tok);
        Py_ssize_t len = PyUnicode_GET_LENGTH(tok);
        uint64_t h = cp_hash(kind, d, 0, len);
        if (slot_of(slots, ns, cps, used, h, kind, d, 0, len) >= 0) {
            PyErr_SetString(PyExc_ValueError, "tok_add: a token is in the table already");
            return NULL; /* the keys added before it stay, with their ids */
        }
        uint64_t s = h & (ns - 1);
        while (slots[s].h) s = (s + 1) & (ns - 1);
        slots[s].h = h;
        slots[s].id = values ? values[i] : first + i;
        slots[s].off = (uint32_t)used;
        slots[s].len = (uint32_t)len;
        for (Py_ssize_t t = 0; t < len; t++) cps[used++] = (uint32_t)PyUnicode_READ(kind, d, t);
        hdr->count++;
    }
    if (used != n_cps + need_cps && PyByteArray_Resize(arena, (Py_ssize_t)(4 * used)) < 0) return NULL;
    Py_RETURN_NONE;
}

/* tok_add(table, arena, tokens, first_id): ids first_id, first_id + 1, ... */
static PyObject *tok_add(PyObject *self, PyObject *args) {
    PyObject *table, *arena, *tokens;
    long long first;
    if (!PyArg_ParseTuple(args, "O!O!O!L:tok_add", &PyByteArray_Type, &table, &PyByteArray_Type, &arena,
                          &PyList_Type, &tokens, &first))
        return NULL;
    return tok_insert(table, arena, tokens, first, NULL);
}

/* tok_put(table, arena, tokens, values): the values of an int64 buffer, one per token. */
static PyObject *tok_put(PyObject *self, PyObject *args) {
    PyObject *table, *arena, *tokens, *vals;
    if (!PyArg_ParseTuple(args, "O!O!O!O:tok_put", &PyByteArray_Type, &table, &PyByteArray_Type, &arena,
                          &PyList_Type, &tokens, &vals))
        return NULL;
    Py_buffer view;
    if (get_int64(vals, &view, "tok_put") < 0) return NULL;
    if (view.len / 8 != PyList_GET_SIZE(tokens)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "tok_put: one value per token");
        return NULL;
    }
    PyObject *out = tok_insert(table, arena, tokens, 0, (const int64_t *)view.buf);
    PyBuffer_Release(&view);
    return out;
}

/* ------------------------------------------------------------------------------- token_ids */

static PyObject *token_ids(PyObject *self, PyObject *args) {
    PyObject *tokens, *index, *arena = NULL;
    if (!PyArg_ParseTuple(args, "O!O|O:token_ids", &PyList_Type, &tokens, &index, &arena)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens), missing = 0;
    if (!PyDict_Check(index)) { /* a token table of tok_add */
        tok_header *hdr;
        st_slot *slots;
        uint32_t *cps;
        uint64_t n_cps;
        if (arena == NULL) {
            PyErr_SetString(PyExc_TypeError, "token_ids: a token table needs its arena");
            return NULL;
        }
        int empty = PyByteArray_Check(index) && PyByteArray_GET_SIZE(index) == 0; /* no key yet */
        if (!empty && tok_view(index, arena, &hdr, &slots, &cps, &n_cps) < 0) return NULL;
        int64_t *ids;
        PyObject *out = new_int64(n, &ids);
        if (!out) return NULL;
        if (empty) {
            for (Py_ssize_t i = 0; i < n; i++) ids[i] = -1;
            return Py_BuildValue("Nn", out, n);
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *tok = PyList_GET_ITEM(tokens, i);
            if (!PyUnicode_Check(tok)) {
                Py_DECREF(out);
                PyErr_SetString(PyExc_TypeError, "token_ids: expected a list of str");
                return NULL;
            }
            int kind = PyUnicode_KIND(tok);
            const void *d = PyUnicode_DATA(tok);
            Py_ssize_t len = PyUnicode_GET_LENGTH(tok);
            Py_ssize_t s = slot_of(slots, hdr->nslots, cps, n_cps, cp_hash(kind, d, 0, len), kind, d, 0, len);
            if (s < 0) {
                ids[i] = -1;
                missing++;
            } else {
                ids[i] = slots[s].id;
            }
        }
        return Py_BuildValue("Nn", out, missing);
    }
    int64_t *ids;
    PyObject *out = new_int64(n, &ids);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n && i < PyList_GET_SIZE(tokens); i++) {
        PyObject *tok = PyList_GET_ITEM(tokens, i);
        PyObject *v = PyDict_GetItemWithError(index, tok); /* borrowed */
        if (v == NULL) {
            if (PyErr_Occurred()) goto fail;
            ids[i] = -1;
            missing++;
            continue;
        }
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) goto fail;
        ids[i] = x;
    }
    if (PyList_GET_SIZE(tokens) != n) {
        PyErr_SetString(PyExc_RuntimeError, "token_ids: the token list changed size");
        goto fail;
    }
    return Py_BuildValue("Nn", out, missing);
fail:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------- utf8_len */

static PyObject *utf8_len(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "utf8_len: expected a str");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) return PyLong_FromSsize_t(n);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t bytes = n; /* one byte per character, plus the continuation bytes */
    if (kind == PyUnicode_1BYTE_KIND) { /* a second byte for each character >= 0x80: their top bits */
        const Py_UCS1 *d = data;
        Py_ssize_t i = 0;
        while (i + 8 <= n) { /* 8 characters at a time, in byte lanes that hold at most 255 each */
            uint64_t lanes = 0;
            for (int k = 0; k < 255 && i + 8 <= n; k++, i += 8) {
                uint64_t x;
                memcpy(&x, d + i, 8);
                lanes += (x >> 7) & 0x0101010101010101ULL;
            }
            for (int b = 0; b < 64; b += 8) bytes += (Py_ssize_t)((lanes >> b) & 0xff);
        }
        for (; i < n; i++) bytes += d[i] >> 7;
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            bytes += (c >= 0x80) + (c >= 0x800) + (c >= 0x10000); /* a lone surrogate: 3 bytes */
        }
    }
    return PyLong_FromSsize_t(bytes);
}

/* ------------------------------------------------------------------------------- str_table */

/* A table of str -> int64 in a bytes object: a header (number of slots, a power of two; number of
 * code points in the arena), open-addressed slots (st_slot) and the keys' code points. Hashes are
 * of code points, so a key matches text of any kind. */
static PyObject *str_table(PyObject *self, PyObject *index) {
    if (!PyDict_Check(index)) {
        PyErr_SetString(PyExc_TypeError, "str_table: expected a dict of str -> int");
        return NULL;
    }
    Py_ssize_t n = PyDict_GET_SIZE(index), pos = 0;
    PyObject *k, *v;
    uint64_t nslots = 8, arena = 0;
    while (nslots < 2 * (uint64_t)n + 8) nslots <<= 1;
    while (PyDict_Next(index, &pos, &k, &v)) {
        if (!PyUnicode_Check(k) || !PyLong_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "str_table: expected a dict of str -> int");
            return NULL;
        }
        arena += (uint64_t)PyUnicode_GET_LENGTH(k);
    }
    if (arena > UINT32_MAX || nslots > ((uint64_t)PY_SSIZE_T_MAX - 16 - 4 * arena) / sizeof(st_slot)) {
        PyErr_SetString(PyExc_OverflowError, "str_table: the index is too large");
        return NULL;
    }
    Py_ssize_t size = (Py_ssize_t)(16 + nslots * sizeof(st_slot) + 4 * arena);
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (!out) return NULL;
    char *base = PyBytes_AS_STRING(out);
    memset(base, 0, (size_t)size);
    uint64_t hdr[2] = {nslots, arena};
    memcpy(base, hdr, 16);
    st_slot *slots = (st_slot *)(base + 16);
    uint32_t *cps = (uint32_t *)(base + 16 + nslots * sizeof(st_slot));
    uint32_t used = 0;
    pos = 0;
    while (PyDict_Next(index, &pos, &k, &v)) {
        long long id = PyLong_AsLongLong(v);
        if (id == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        int kind = PyUnicode_KIND(k);
        const void *d = PyUnicode_DATA(k);
        Py_ssize_t len = PyUnicode_GET_LENGTH(k);
        if ((uint64_t)used + (uint64_t)len > arena) { /* the dict changed size while read */
            Py_DECREF(out);
            PyErr_SetString(PyExc_RuntimeError, "str_table: the index changed while read");
            return NULL;
        }
        uint64_t h = cp_hash(kind, d, 0, len), s = h & (nslots - 1);
        while (slots[s].h) s = (s + 1) & (nslots - 1); /* a dict's keys are distinct */
        slots[s].h = h;
        slots[s].id = id;
        slots[s].off = used;
        slots[s].len = (uint32_t)len;
        for (Py_ssize_t t = 0; t < len; t++) cps[used++] = (uint32_t)PyUnicode_READ(kind, d, t);
    }
    return out;
}

typedef struct {
    uint64_t nslots, arena;
    const st_slot *slots;
    const uint32_t *cps;
} st_view;

/* A view of a table made by str_table; -1 with an exception when the buffer is not one. */
static int st_open(const Py_buffer *buf, st_view *t) {
    uint64_t hdr[2];
    if (buf->len < 16) goto bad;
    memcpy(hdr, buf->buf, 16);
    t->nslots = hdr[0];
    t->arena = hdr[1];
    if (t->nslots == 0 || (t->nslots & (t->nslots - 1)) || t->nslots > (uint64_t)buf->len / sizeof(st_slot)
        || t->arena > (uint64_t)buf->len / 4
        || (uint64_t)buf->len != 16 + t->nslots * sizeof(st_slot) + 4 * t->arena)
        goto bad;
    t->slots = (const st_slot *)((const char *)buf->buf + 16);
    t->cps = (const uint32_t *)((const char *)buf->buf + 16 + t->nslots * sizeof(st_slot));
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "not a table made by str_table");
    return -1;
}

static inline int64_t st_find(const st_view *t, int kind, const void *data, Py_ssize_t i, Py_ssize_t j,
                              int64_t other) {
    Py_ssize_t s = slot_of(t->slots, t->nslots, t->cps, t->arena, cp_hash(kind, data, i, j), kind, data, i, j);
    return s < 0 ? other : t->slots[s].id;
}

/* ------------------------------------------------------------------------------- word_ids */

/* A character of the class [^\W\d_] of Python's re on str patterns: \w is str.isalnum() or "_",
 * \d is str.isdecimal() (sre's SRE_UNI_IS_ALNUM and SRE_UNI_IS_DIGIT). */
static inline int is_letter(Py_UCS4 c) {
    return c != '_' && u_isalnum(c) && !u_isdecimal(c);
}

static PyObject *word_ids(PyObject *self, PyObject *args) {
    PyObject *text, *index;
    long long other;
    if (!PyArg_ParseTuple(args, "UOL:word_ids", &text, &index, &other)) return NULL;
    /* index: a dict, or a table of str_table read in place (no str object per word) */
    Py_buffer buf = {0};
    st_view table;
    int use_table = !PyDict_Check(index);
    if (use_table) {
        if (PyObject_GetBuffer(index, &buf, PyBUF_SIMPLE) < 0) return NULL;
        if (st_open(&buf, &table) < 0) {
            PyBuffer_Release(&buf);
            return NULL;
        }
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t cap = 64, len = 0;
    int64_t *ids = PyMem_Malloc(cap * sizeof(int64_t));
    if (!ids) {
        if (use_table) PyBuffer_Release(&buf);
        return PyErr_NoMemory();
    }
    Py_ssize_t i = 0;
    while (i < n) {
        if (!is_letter(PyUnicode_READ(kind, data, i))) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < n && is_letter(PyUnicode_READ(kind, data, j))) j++;
        /* (?:'[^\W\d_]+)?: an apostrophe followed by a letter extends the match by that run */
        if (j + 1 < n && PyUnicode_READ(kind, data, j) == '\'' && is_letter(PyUnicode_READ(kind, data, j + 1))) {
            j += 2;
            while (j < n && is_letter(PyUnicode_READ(kind, data, j))) j++;
        }
        long long x = other;
        if (use_table) {
            x = st_find(&table, kind, data, i, j, other);
        } else {
            PyObject *w = PyUnicode_Substring(text, i, j);
            if (!w) goto fail;
            PyObject *v = PyDict_GetItemWithError(index, w);
            Py_DECREF(w);
            if (v != NULL) {
                x = PyLong_AsLongLong(v);
                if (x == -1 && PyErr_Occurred()) goto fail;
            } else if (PyErr_Occurred()) {
                goto fail;
            }
        }
        if (len == cap) {
            cap *= 2;
            int64_t *grown = PyMem_Realloc(ids, cap * sizeof(int64_t));
            if (!grown) {
                PyErr_NoMemory();
                goto fail;
            }
            ids = grown;
        }
        ids[len++] = x;
        i = j;
    }
    PyObject *out = PyByteArray_FromStringAndSize((const char *)ids, len * 8);
    PyMem_Free(ids);
    if (use_table) PyBuffer_Release(&buf);
    return out;
fail:
    PyMem_Free(ids);
    if (use_table) PyBuffer_Release(&buf);
    return NULL;
}

/* ------------------------------------------------------------------------------- sorting */

/* An in-place ascending sort of int64 values (qsort's order, without a call per comparison):
 * quicksort on the median of three, the smaller side first (stack depth below 64), insertion sort
 * under 24 values, heapsort where a partition goes badly (introsort), so never quadratic. */
static void sift_i64(int64_t *a, Py_ssize_t root, Py_ssize_t n) {
    int64_t x = a[root];
    for (Py_ssize_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && a[child + 1] > a[child]) child++;
        if (a[child] <= x) break;
        a[root] = a[child];
    }
    a[root] = x;
}

static void sort_i64(int64_t *a, Py_ssize_t n) {
    Py_ssize_t lo_stack[64], hi_stack[64];
    int depth_stack[64], top = 0, limit = 1;
    for (Py_ssize_t m = n; m > 1; m >>= 1) limit += 2;
    lo_stack[0] = 0;
    hi_stack[0] = n;
    depth_stack[0] = limit;
    top = 1;
    while (top > 0) {
        top--;
        Py_ssize_t lo = lo_stack[top], hi = hi_stack[top];
        int depth = depth_stack[top];
        while (hi - lo > 24) {
            if (depth-- <= 0 || top >= 63) { /* heapsort of a[lo:hi] (and never past the stack) */
                int64_t *b = a + lo;
                Py_ssize_t m = hi - lo;
                for (Py_ssize_t r = m / 2 - 1; r >= 0; r--) sift_i64(b, r, m);
                for (Py_ssize_t e = m - 1; e > 0; e--) {
                    int64_t t = b[0];
                    b[0] = b[e];
                    b[e] = t;
                    sift_i64(b, 0, e);
                }
                lo = hi;
                break;
            }
            Py_ssize_t mid = lo + (hi - lo) / 2;
            int64_t x = a[lo], y = a[mid], z = a[hi - 1];
            int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
            Py_ssize_t i = lo, j = hi - 1;
            while (i <= j) { /* Hoare partition: a[lo:i] <= pivot <= a[j+1:hi] */
                while (a[i] < pivot) i++;
                while (a[j] > pivot) j--;
                if (i <= j) {
                    int64_t t = a[i];
                    a[i] = a[j];
                    a[j] = t;
                    i++;
                    j--;
                }
            }
            /* a[lo:j+1] and a[i:hi]: push the larger, go on with the smaller */
            if (j + 1 - lo < hi - i) {
                lo_stack[top] = i;
                hi_stack[top] = hi;
                depth_stack[top++] = depth;
                hi = j + 1;
            } else {
                lo_stack[top] = lo;
                hi_stack[top] = j + 1;
                depth_stack[top++] = depth;
                lo = i;
            }
        }
        for (Py_ssize_t i = lo + 1; i < hi; i++) { /* insertion sort of the short rest */
            int64_t t = a[i];
            Py_ssize_t j = i;
            while (j > lo && a[j - 1] > t) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = t;
        }
    }
}

/* ------------------------------------------------------------------------------- unique_counts */

/* Counts of small non-negative values (token ids) go into this scratch array, indexed by value and
 * zeroed again after each call, so only the distinct values are sorted. The GIL serialises calls. */
static uint32_t *scratch = NULL;
static Py_ssize_t scratch_len = 0;
#define SCRATCH_MAX (1 << 24)

static PyObject *unique_counts(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (get_int64(arg, &view, "unique_counts") < 0) return NULL;
    Py_ssize_t n = view.len / 8;
    const int64_t *v = view.buf;
    int64_t lo = 0, hi = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || v[i] < lo) lo = v[i];
        if (i == 0 || v[i] > hi) hi = v[i];
    }
    int small = n > 0 && lo >= 0 && hi < SCRATCH_MAX && n < UINT32_MAX;
    if (small && hi >= scratch_len) {
        Py_ssize_t len = scratch_len ? scratch_len : 1024;
        while (len <= hi) len *= 2;
        uint32_t *grown = PyMem_Realloc(scratch, len * sizeof(uint32_t));
        if (!grown) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        memset(grown + scratch_len, 0, (len - scratch_len) * sizeof(uint32_t));
        scratch = grown;
        scratch_len = len;
    }
    int64_t *tmp = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    if (!tmp) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Py_ssize_t k = 0;
    if (small) { /* the distinct values, then sorted */
        for (Py_ssize_t i = 0; i < n; i++)
            if (scratch[v[i]]++ == 0) tmp[k++] = v[i];
    } else { /* every value sorted, then the runs */
        memcpy(tmp, v, n * 8);
        k = n;
    }
    sort_i64(tmp, k);
    Py_ssize_t d = 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (i == 0 || tmp[i] != tmp[i - 1]) d++;
    int64_t *u = NULL, *c = NULL;
    PyObject *uo = new_int64(d, &u), *co = uo ? new_int64(d, &c) : NULL;
    if (co) {
        Py_ssize_t j = -1;
        for (Py_ssize_t i = 0; i < k; i++) {
            if (i == 0 || tmp[i] != tmp[i - 1]) {
                u[++j] = tmp[i];
                c[j] = 0;
            }
            c[j] += small ? (int64_t)scratch[tmp[i]] : 1;
        }
    }
    if (small)
        for (Py_ssize_t i = 0; i < k; i++) scratch[tmp[i]] = 0;
    PyBuffer_Release(&view);
    PyMem_Free(tmp);
    if (!co) {
        Py_XDECREF(uo);
        return NULL;
    }
    return Py_BuildValue("NN", uo, co);
}

/* ------------------------------------------------------------------------------- rep_ngram_cover */

/* junkstats.rep_ngram_share's count: the n-gram hash h = h * MIX + x[k + i] + (k + 1) over
 * k = 0..n-1 (uint64, wrapping), a position is repeated when its hash occurs twice or more, and a
 * token is covered when it lies in a repeated n-gram. Returns the number of covered tokens. */
static PyObject *rep_ngram_cover(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On:rep_ngram_cover", &obj, &n)) return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "rep_ngram_cover: n must be >= 1");
        return NULL;
    }
    Py_buffer view;
    if (get_int64(obj, &view, "rep_ngram_cover") < 0) return NULL;
    const uint64_t *x = view.buf;
    Py_ssize_t len = view.len / 8, m = len - n + 1;
    if (m <= 0) {
        PyBuffer_Release(&view);
        return PyLong_FromLong(0);
    }
    const uint64_t MIX = 0x9E3779B97F4A7C15ULL;
    /* the hashes, and a sorted copy (as int64: only equal values need to meet) from which the
     * repeated ones are taken; a position is repeated when its hash is one of them */
    int64_t *h = PyMem_Malloc(m * sizeof(int64_t)), *sorted = PyMem_Malloc(m * sizeof(int64_t));
    unsigned char *rep = PyMem_Calloc(m, 1);
    Py_ssize_t *diff = PyMem_Calloc(len + 1, sizeof(Py_ssize_t));
    if (!h || !sorted || !rep || !diff) {
        PyMem_Free(h);
        PyMem_Free(sorted);
        PyMem_Free(rep);
        PyMem_Free(diff);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t v = 0;
        for (Py_ssize_t k = 0; k < n; k++) v = v * MIX + x[k + i] + (uint64_t)(k + 1);
        h[i] = (int64_t)v;
    }
    PyBuffer_Release(&view);
    memcpy(sorted, h, m * sizeof(int64_t));
    sort_i64(sorted, m);
    Py_ssize_t r = 0; /* the repeated hashes, distinct and sorted, to the front of sorted */
    for (Py_ssize_t a = 0; a < m;) {
        Py_ssize_t b = a + 1;
        while (b < m && sorted[b] == sorted[a]) b++;
        if (b - a >= 2) sorted[r++] = sorted[a];
        a = b;
    }
    for (Py_ssize_t i = 0; r && i < m; i++) {
        Py_ssize_t lo = 0, hi = r; /* is h[i] among them */
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] < h[i]) lo = mid + 1;
            else hi = mid;
        }
        rep[i] = lo < r && sorted[lo] == h[i];
    }
    PyMem_Free(h);
    PyMem_Free(sorted);
    for (Py_ssize_t i = 0; i < m; i++)
        if (rep[i]) {
            diff[i]++;
            diff[i + n]--;
        }
    Py_ssize_t covered = 0, run = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        run += diff[i];
        covered += run > 0;
    }
    PyMem_Free(rep);
    PyMem_Free(diff);
    return PyLong_FromSsize_t(covered);
}

/* ------------------------------------------------------------------------------- lines */

#define READ(i) PyUnicode_READ(kind, data, (i))
#define SPACE(c) Py_UNICODE_ISSPACE(c)

/* [lo, hi) shrunk by str.strip() (Python's whitespace: Py_UNICODE_ISSPACE). */
static void strip_span(int kind, const void *data, Py_ssize_t *lo, Py_ssize_t *hi) {
    while (*lo < *hi && SPACE(READ(*lo))) (*lo)++;
    while (*hi > *lo && SPACE(READ(*hi - 1))) (*hi)--;
}

/* textstats.TERMINAL (junkstats.TERMINAL): closes a sentence or clause */
static int is_terminal(Py_UCS4 c) {
    switch (c) {
    case '.': case '!': case '?': case ':': case ';': case '"': case '\'': case ')':
    case 0x201D: case 0x2019: case 0x3002: case 0xFF01: case 0xFF1F: case 0x2026:
        return 1;
    default:
        return 0;
    }
}

/* text_lines(text) -> (the lines of text.split("\n") with a non-space character, how many of them
 * end in a TERMINAL character once trailing spaces are stripped) */
static PyObject *text_lines(PyObject *self, PyObject *args) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:text_lines", &text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), punct = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *lines = PyList_New(0);
    if (!lines) return NULL;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i < n && READ(i) != '\n') continue;
        Py_ssize_t lo = start, hi = i;
        strip_span(kind, data, &lo, &hi);
        if (hi > lo) {
            PyObject *ln = PyUnicode_Substring(text, start, i);
            if (!ln || PyList_Append(lines, ln) < 0) {
                Py_XDECREF(ln);
                Py_DECREF(lines);
                return NULL;
            }
            Py_DECREF(ln);
            punct += is_terminal(READ(hi - 1));
        }
        start = i + 1;
    }
    return Py_BuildValue("Nn", lines, punct);
}

/* dup_line_counts(lines) -> (characters of stripped lines seen before in the list, characters of
 * all stripped lines) */
static PyObject *dup_line_counts(PyObject *self, PyObject *args) {
    PyObject *lines;
    if (!PyArg_ParseTuple(args, "O!:dup_line_counts", &PyList_Type, &lines)) return NULL;
    PyObject *seen = PySet_New(NULL);
    if (!seen) return NULL;
    Py_ssize_t dup = 0, total = 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lines); k++) {
        PyObject *ln = PyList_GET_ITEM(lines, k);
        if (!PyUnicode_Check(ln)) {
            PyErr_SetString(PyExc_TypeError, "dup_line_counts: lines must be str");
            goto fail;
        }
        int kind = PyUnicode_KIND(ln);
        const void *data = PyUnicode_DATA(ln);
        Py_ssize_t lo = 0, hi = PyUnicode_GET_LENGTH(ln);
        strip_span(kind, data, &lo, &hi);
        PyObject *s = PyUnicode_Substring(ln, lo, hi);
        if (!s) goto fail;
        int has = PySet_Contains(seen, s);
        if (has < 0 || (!has && PySet_Add(seen, s) < 0)) {
            Py_DECREF(s);
            goto fail;
        }
        Py_DECREF(s);
        total += hi - lo;
        if (has) dup += hi - lo;
    }
    Py_DECREF(seen);
    return Py_BuildValue("nn", dup, total);
fail:
    Py_DECREF(seen);
    return NULL;
}

/* ------------------------------------------------------------------------------- navigation labels */

static int is_separator(Py_UCS4 c) { /* junkstats._SEPARATOR_CHAR: [·|•»›] */
    return c == 0xB7 || c == '|' || c == 0x2022 || c == 0xBB || c == 0x203A;
}

static int not_label_char(Py_UCS4 c) { /* junkstats._NOT_LABEL: [=(){};<>\[\]$%@#\\/:\d] */
    return (c < 128 && strchr("=(){};<>[]$%@#\\/:", (int)c) != NULL && c != 0) || u_isdecimal(c);
}

/* The end of junkstats._NUMBERING's match at lo ("2.1. ", "A. ", "iv. "), or lo when none. */
static Py_ssize_t numbering_end(int kind, const void *data, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t j = lo;
    Py_UCS4 c = lo < hi ? READ(lo) : 0;
    if (lo < hi && u_isdecimal(c)) { /* \d+(?:\.\d+)*\.? */
        while (j < hi && u_isdecimal(READ(j))) j++;
        while (j + 1 < hi && READ(j) == '.' && u_isdecimal(READ(j + 1))) {
            j += 2;
            while (j < hi && u_isdecimal(READ(j))) j++;
        }
        if (j < hi && READ(j) == '.') j++;
    } else if (lo + 1 < hi && c >= 'A' && c <= 'Z' && READ(lo + 1) == '.') { /* [A-Z]\. */
        j = lo + 2;
    } else if (lo < hi && (c == 'i' || c == 'v' || c == 'x')) { /* [ivx]+\. */
        while (j < hi && (READ(j) == 'i' || READ(j) == 'v' || READ(j) == 'x')) j++;
        if (!(j < hi && READ(j) == '.')) return lo;
        j++;
    } else {
        return lo;
    }
    if (!(j < hi && SPACE(READ(j)))) return lo; /* \s+ */
    while (j < hi && SPACE(READ(j))) j++;
    return j;
}

/* junkstats._is_label of seg[lo:hi]: 1, 0, or -1 on error */
static int is_label(PyObject *seg, Py_ssize_t lo, Py_ssize_t hi, PyObject *stop) {
    int kind = PyUnicode_KIND(seg);
    const void *data = PyUnicode_DATA(seg);
    lo = numbering_end(kind, data, lo, hi);
    Py_ssize_t len = hi - lo;
    if (len >= 3 && READ(hi - 2) == '(' && READ(hi - 1) == ')') { /* _API_ENTRY: [A-Za-z_][\w.]*\(\) */
        Py_UCS4 c = READ(lo);
        int ok = (c < 128 && (isalpha((int)c) || c == '_'));
        for (Py_ssize_t i = lo + 1; ok && i < hi - 2; i++) {
            Py_UCS4 d = READ(i);
            ok = u_isalnum(d) || d == '_' || d == '.';
        }
        if (ok) return 1;
    }
    if (len == 0 || !u_isupper(READ(lo))) return 0;
    Py_UCS4 last = READ(hi - 1);
    if (is_terminal(last) || last == ',') return 0;
    for (Py_ssize_t i = lo; i < hi; i++)
        if (not_label_char(READ(i))) return 0;
    /* s.split(None, 7): more than 7 words is not a label; up to 2 words is */
    Py_ssize_t starts[8], ends[8], nw = 0, i = lo;
    while (i < hi) {
        while (i < hi && SPACE(READ(i))) i++;
        if (i >= hi) break;
        if (nw == 7) return 0;
        starts[nw] = i;
        while (i < hi && !SPACE(READ(i))) i++;
        ends[nw++] = i;
    }
    if (nw <= 2) return 1;
    int function_words = 0;
    for (Py_ssize_t w = 0; w < nw; w++) {
        PyObject *word = PyUnicode_Substring(seg, starts[w], ends[w]);
        if (!word) return -1;
        PyObject *low = PyObject_CallMethod(word, "lower", NULL);
        Py_DECREF(word);
        if (!low) return -1;
        int in = PySet_Contains(stop, low);
        Py_DECREF(low);
        if (in < 0) return -1;
        function_words += in;
    }
    return function_words <= 1;
}

/* label_counts(lines, stop, max_lines) -> None (fewer than 8 segments) or (label segments,
 * segments, characters of the labels, characters of the segments): junkstats.label_share's sums */
static PyObject *label_counts(PyObject *self, PyObject *args) {
    PyObject *lines, *stop;
    Py_ssize_t max_lines;
    if (!PyArg_ParseTuple(args, "O!On:label_counts", &PyList_Type, &lines, &stop, &max_lines)) return NULL;
    if (!PyAnySet_Check(stop)) {
        PyErr_SetString(PyExc_TypeError, "label_counts: stop must be a set or frozenset");
        return NULL;
    }
    Py_ssize_t nl = PyList_GET_SIZE(lines), segs = 0, labels = 0, seg_chars = 0, label_chars = 0;
    if (nl > max_lines) nl = max_lines;
    for (Py_ssize_t k = 0; k < nl; k++) {
        PyObject *ln = PyList_GET_ITEM(lines, k);
        if (!PyUnicode_Check(ln)) {
            PyErr_SetString(PyExc_TypeError, "label_counts: lines must be str");
            return NULL;
        }
        int kind = PyUnicode_KIND(ln);
        const void *data = PyUnicode_DATA(ln);
        Py_ssize_t lo = 0, hi = PyUnicode_GET_LENGTH(ln);
        strip_span(kind, data, &lo, &hi);
        /* pieces between separators, each stripped (what _SEPARATORS.split gives), empty ones left out */
        Py_ssize_t a = lo;
        for (Py_ssize_t i = lo; i <= hi; i++) {
            if (i < hi && !is_separator(READ(i))) continue;
            Py_ssize_t p = a, q = i;
            strip_span(kind, data, &p, &q);
            if (q - p >= 2) {
                segs++;
                seg_chars += q - p;
                int lab = is_label(ln, p, q, stop);
                if (lab < 0) return NULL;
                if (lab) {
                    labels++;
                    label_chars += q - p;
                }
            }
            a = i + 1;
        }
    }
    if (segs < 8) Py_RETURN_NONE;
    return Py_BuildValue("nnnn", labels, segs, label_chars, seg_chars);
}

/* ------------------------------------------------------------------------------- line starts */

/* The str of kind/data[lo:hi] lower-cased (str.lower) with every run of decimal digits as "0". */
static PyObject *lower_digits0(PyObject *s) {
    PyObject *low = PyObject_CallMethod(s, "lower", NULL);
    if (!low) return NULL;
    int kind = PyUnicode_KIND(low);
    const void *data = PyUnicode_DATA(low);
    Py_ssize_t n = PyUnicode_GET_LENGTH(low), m = 0;
    Py_UCS4 *buf = PyMem_Malloc((n ? n : 1) * sizeof(Py_UCS4));
    if (!buf) {
        Py_DECREF(low);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n;) {
        Py_UCS4 c = READ(i);
        if (u_isdecimal(c)) {
            while (i < n && u_isdecimal(READ(i))) i++;
            buf[m++] = '0';
        } else {
            buf[m++] = c;
            i++;
        }
    }
    PyObject *out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, m);
    PyMem_Free(buf);
    Py_DECREF(low);
    return out;
}

static int all_chars(int kind, const void *data, Py_ssize_t lo, Py_ssize_t hi, int alpha) {
    if (hi <= lo) return 0;
    for (Py_ssize_t i = lo; i < hi; i++)
        if (!(alpha ? u_isalpha(READ(i)) : u_isalnum(READ(i)))) return 0;
    return 1;
}

/* line_starts(lines, max_lines) -> distinct line starts of the first max_lines lines:
 * junkstats.line_start_variety's numerator */
static PyObject *line_starts(PyObject *self, PyObject *args) {
    PyObject *lines;
    Py_ssize_t max_lines;
    if (!PyArg_ParseTuple(args, "O!n:line_starts", &PyList_Type, &lines, &max_lines)) return NULL;
    PyObject *raw = PySet_New(NULL), *norm = NULL;
    if (!raw) return NULL;
    Py_ssize_t nl = PyList_GET_SIZE(lines);
    if (nl > max_lines) nl = max_lines;
    for (Py_ssize_t k = 0; k < nl; k++) {
        PyObject *ln = PyList_GET_ITEM(lines, k);
        if (!PyUnicode_Check(ln)) {
            PyErr_SetString(PyExc_TypeError, "line_starts: lines must be str");
            goto fail;
        }
        int kind = PyUnicode_KIND(ln);
        const void *data = PyUnicode_DATA(ln);
        Py_ssize_t n = PyUnicode_GET_LENGTH(ln), ts[3], te[3], nt = 0, i = 0;
        while (nt < 3 && i < n) { /* the first three whitespace tokens */
            while (i < n && SPACE(READ(i))) i++;
            if (i >= n) break;
            ts[nt] = i;
            while (i < n && !SPACE(READ(i))) i++;
            te[nt++] = i;
        }
        if (nt == 0) continue; /* not reached for the lines doc_stats passes (each has a non-space) */
        PyObject *first;
        Py_ssize_t second = 1; /* index of the token that may follow the first */
        int bullet = 0;
        if (nt > 1) { /* a token without any letter or digit is a bullet: joined to the next token */
            bullet = 1;
            for (Py_ssize_t j = ts[0]; j < te[0]; j++)
                if (u_isalnum(READ(j))) {
                    bullet = 0;
                    break;
                }
        }
        if (bullet) {
            PyObject *a = PyUnicode_Substring(ln, ts[0], te[0]), *b = PyUnicode_Substring(ln, ts[1], te[1]);
            first = (a && b) ? PyUnicode_FromFormat("%U %U", a, b) : NULL;
            Py_XDECREF(a);
            Py_XDECREF(b);
            second = 2;
        } else {
            first = PyUnicode_Substring(ln, ts[0], te[0]);
        }
        if (!first) goto fail;
        PyObject *start = first;
        if (second < nt && all_chars(kind, data, ts[second], te[second], 1)) {
            PyObject *b = PyUnicode_Substring(ln, ts[second], te[second]);
            start = b ? PyUnicode_FromFormat("%U %U", first, b) : NULL;
            Py_XDECREF(b);
            Py_DECREF(first);
            if (!start) goto fail;
        }
        int rc = PySet_Add(raw, start);
        Py_DECREF(start);
        if (rc < 0) goto fail;
    }
    norm = PySet_New(NULL);
    if (!norm) goto fail;
    PyObject *it = PyObject_GetIter(raw), *item;
    if (!it) goto fail;
    while ((item = PyIter_Next(it)) != NULL) {
        PyObject *x = lower_digits0(item);
        Py_DECREF(item);
        if (!x || PySet_Add(norm, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(it);
            goto fail;
        }
        Py_DECREF(x);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) goto fail;
    Py_ssize_t distinct = PySet_GET_SIZE(norm);
    Py_DECREF(raw);
    Py_DECREF(norm);
    return PyLong_FromSsize_t(distinct);
fail:
    Py_DECREF(raw);
    Py_XDECREF(norm);
    return NULL;
}

/* ------------------------------------------------------------------------------- segments */

/* boilerplate_counts(text, frequent, short) -> (characters of the segments of at most short
 * characters that are in frequent, characters of all segments, segments): textstats.boilerplate_share's
 * sums over textstats.segments(text, short_only=False) (text: the prefix it reads) */
static PyObject *boilerplate_counts(PyObject *self, PyObject *args) {
    PyObject *text, *frequent;
    Py_ssize_t short_len;
    if (!PyArg_ParseTuple(args, "UOn:boilerplate_counts", &text, &frequent, &short_len)) return NULL;
    if (!PyAnySet_Check(frequent)) {
        PyErr_SetString(PyExc_TypeError, "boilerplate_counts: frequent must be a set or frozenset");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), hits = 0, total = 0, count = 0, a = 0;
    Py_UCS4 *buf = PyMem_Malloc((n ? n : 1) * sizeof(Py_UCS4));
    if (!buf) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i < n && !(is_separator(READ(i)) || READ(i) == '\n')) continue;
        /* " ".join(seg.split()): the words joined by one space */
        Py_ssize_t m = 0, j = a;
        while (j < i) {
            while (j < i && SPACE(READ(j))) j++;
            if (j >= i) break;
            if (m) buf[m++] = ' ';
            while (j < i && !SPACE(READ(j))) buf[m++] = READ(j++);
        }
        a = i + 1;
        if (m == 0) continue;
        PyObject *seg = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, m);
        PyObject *low = seg ? PyObject_CallMethod(seg, "lower", NULL) : NULL;
        Py_XDECREF(seg);
        if (!low) {
            PyMem_Free(buf);
            return NULL;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(low);
        if (len >= 2) {
            count++;
            total += len;
            if (len <= short_len) {
                int in = PySet_Contains(frequent, low);
                if (in < 0) {
                    Py_DECREF(low);
                    PyMem_Free(buf);
                    return NULL;
                }
                if (in) hits += len;
            }
        }
        Py_DECREF(low);
    }
    PyMem_Free(buf);
    return Py_BuildValue("nnn", hits, total, count);
}

/* ------------------------------------------------------------------------------- timestamps */

#define DEC(i) ((i) < L && u_isdecimal(READ(i)))

/* junkstats._STAMP matches ln[:L] at i: (?<!\d)(?:\d{1,2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}|1\d{9}(?:\.\d+)?)(?!\d).
 * The optional fraction never changes the outcome: after 1\d{9}, either the lookahead holds or a
 * digit follows; \d{1,2} tried with two digits and then one. */
static int stamp_at(int kind, const void *data, Py_ssize_t L, Py_ssize_t i) {
    if (i > 0 && DEC(i - 1)) return 0;
    for (int w = 2; w >= 1; w--) { /* \d{1,2}:\d{2}:\d{2} */
        Py_ssize_t j = i;
        int ok = 1;
        for (int k = 0; k < w && ok; k++) ok = DEC(j + k);
        j += w;
        ok = ok && j < L && READ(j) == ':' && DEC(j + 1) && DEC(j + 2) && j + 3 < L && READ(j + 3) == ':'
             && DEC(j + 4) && DEC(j + 5) && !DEC(j + 6);
        if (ok) return 1;
    }
    if (DEC(i) && DEC(i + 1) && DEC(i + 2) && DEC(i + 3) && i + 4 < L && READ(i + 4) == '-' && DEC(i + 5)
        && DEC(i + 6) && i + 7 < L && READ(i + 7) == '-' && DEC(i + 8) && DEC(i + 9) && !DEC(i + 10))
        return 1;
    if (i < L && READ(i) == '1') { /* 1\d{9} */
        for (int k = 1; k <= 9; k++)
            if (!DEC(i + k)) return 0;
        return !DEC(i + 10);
    }
    return 0;
}

/* stamped_lines(lines, max_lines, prefix) -> lines among the first max_lines with a match of
 * junkstats._STAMP in their first prefix characters (re's search(ln, 0, prefix)) */
static PyObject *stamped_lines(PyObject *self, PyObject *args) {
    PyObject *lines;
    Py_ssize_t max_lines, prefix, found = 0;
    if (!PyArg_ParseTuple(args, "O!nn:stamped_lines", &PyList_Type, &lines, &max_lines, &prefix)) return NULL;
    Py_ssize_t nl = PyList_GET_SIZE(lines);
    if (nl > max_lines) nl = max_lines;
    for (Py_ssize_t k = 0; k < nl; k++) {
        PyObject *ln = PyList_GET_ITEM(lines, k);
        if (!PyUnicode_Check(ln)) {
            PyErr_SetString(PyExc_TypeError, "stamped_lines: lines must be str");
            return NULL;
        }
        int kind = PyUnicode_KIND(ln);
        const void *data = PyUnicode_DATA(ln);
        Py_ssize_t L = PyUnicode_GET_LENGTH(ln);
        if (L > prefix) L = prefix;
        for (Py_ssize_t i = 0; i < L; i++)
            if (DEC(i) && stamp_at(kind, data, L, i)) { /* every stamp starts with a digit */
                found++;
                break;
            }
    }
    return PyLong_FromSsize_t(found);
}

/* ------------------------------------------------------------------------------- characters */

/* char_counts(text) -> how often each distinct character occurs, in the order of first occurrence
 * (the values of Counter(text)) */
static int32_t *slot = NULL; /* per code point: 1 + its index among the distinct ones, 0 if absent */

static PyObject *char_counts(PyObject *self, PyObject *args) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:char_counts", &text)) return NULL;
    if (!slot && !(slot = PyMem_Calloc(0x110000, sizeof(int32_t)))) return PyErr_NoMemory();
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), d = 0;
    Py_UCS4 *chars = PyMem_Malloc((n ? n : 1) * sizeof(Py_UCS4));
    Py_ssize_t *counts = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    if (!chars || !counts) {
        PyMem_Free(chars);
        PyMem_Free(counts);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = READ(i);
        if (!slot[c]) {
            chars[d] = c;
            slot[c] = (int32_t)(++d);
        }
        counts[slot[c] - 1]++;
    }
    PyObject *out = PyList_New(d);
    for (Py_ssize_t k = 0; k < d; k++) {
        slot[chars[k]] = 0;
        if (out) {
            PyObject *v = PyLong_FromSsize_t(counts[k]);
            if (!v) {
                Py_CLEAR(out);
                continue;
            }
            PyList_SET_ITEM(out, k, v);
        }
    }
    PyMem_Free(chars);
    PyMem_Free(counts);
    return out;
}

/* nonascii_tokens(text) -> the matches of junkstats._NON_ASCII_TOKEN, [^\s]*[^\x00-\x7f][^\s]*: at
 * each start, the run of non-space characters, then a non-ASCII character (a non-ASCII space such
 * as U+00A0 right after the run, else the last non-ASCII character of the run), then the run of
 * non-space characters after it */
static PyObject *nonascii_tokens(PyObject *self, PyObject *args) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:nonascii_tokens", &text)) return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    while (i < n) {
        Py_ssize_t j = i, e = -1;
        int non_ascii = 0;
        while (j < n && !SPACE(READ(j))) non_ascii |= READ(j++) > 0x7f;
        if (j < n && READ(j) > 0x7f) { /* a non-ASCII space after the run: the run, it, the next run */
            e = j + 1;
            while (e < n && !SPACE(READ(e))) e++;
        } else if (non_ascii) {
            e = j;
        }
        if (e < 0) { /* no match starts anywhere in this run or at the space after it */
            i = j + 1;
            continue;
        }
        PyObject *tok = PyUnicode_Substring(text, i, e);
        if (!tok || PyList_Append(out, tok) < 0) {
            Py_XDECREF(tok);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(tok);
        i = e;
    }
    return out;
}

/* ------------------------------------------------------------------------------- quality inputs */

static inline int is_word(Py_UCS4 c) { return c == '_' || u_isalnum(c); } /* re's \w on str */

/* str.splitlines()'s line boundaries */
static inline int is_line_break(Py_UCS4 c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85
           || c == 0x2028 || c == 0x2029;
}

/* A growing UCS4 buffer. */
typedef struct {
    Py_UCS4 *buf;
    Py_ssize_t len, cap;
} ubuf_t;

static int ubuf_put(ubuf_t *b, Py_UCS4 c) {
    if (b->len == b->cap) {
        Py_ssize_t cap = b->cap ? 2 * b->cap : 256;
        Py_UCS4 *grown = PyMem_Realloc(b->buf, cap * sizeof(Py_UCS4));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        b->buf = grown;
        b->cap = cap;
    }
    b->buf[b->len++] = c;
    return 0;
}

/* The tokens of r"\w+|[^\w\s]" in the characters of text (those whose bit is set in skip left out,
 * decimal digits as "0" when digits0), joined by one space; with lines, one str per line of
 * str.splitlines() that holds a token, else one str. */
static PyObject *tokens_joined(PyObject *text, const unsigned char *skip, Py_ssize_t skip_len, int digits0,
                               int lines) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    ubuf_t b = {NULL, 0, 0};
    PyObject *out = lines ? PyList_New(0) : NULL;
    if (lines && !out) return NULL;
    int in_word = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        Py_UCS4 c = i < n ? READ(i) : '\n';
        if (i < n && skip && (Py_ssize_t)(c >> 3) < skip_len && (skip[c >> 3] >> (c & 7)) & 1) continue;
        if (i < n && is_word(c)) {
            if (!in_word && b.len && ubuf_put(&b, ' ') < 0) goto fail;
            if (ubuf_put(&b, digits0 && u_isdecimal(c) ? '0' : c) < 0) goto fail;
            in_word = 1;
            continue;
        }
        in_word = 0;
        if (i == n || (lines && is_line_break(c))) {
            if (lines && b.len) {
                PyObject *ln = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, b.buf, b.len);
                if (!ln || PyList_Append(out, ln) < 0) {
                    Py_XDECREF(ln);
                    goto fail;
                }
                Py_DECREF(ln);
                b.len = 0;
            }
            continue;
        }
        if (SPACE(c)) continue;
        if ((b.len && ubuf_put(&b, ' ') < 0) || ubuf_put(&b, c) < 0) goto fail;
    }
    if (!lines) out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, b.buf, b.len);
    PyMem_Free(b.buf);
    return out;
fail:
    PyMem_Free(b.buf);
    Py_XDECREF(out);
    return NULL;
}

/* ft_tokens(text) -> " ".join(re.findall(r"\w+|[^\w\s]", text)) */
static PyObject *ft_tokens(PyObject *self, PyObject *args) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:ft_tokens", &text)) return NULL;
    return tokens_joined(text, NULL, 0, 0, 0);
}

/* lm_tokens(text, skip) -> per line of text.splitlines() with a token, its tokens of
 * r"\w+|[^\w\s]" joined by a space, with the characters whose bit is set in the bitmap skip
 * removed first and every decimal digit as "0" */
static PyObject *lm_tokens(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_buffer skip;
    if (!PyArg_ParseTuple(args, "Uy*:lm_tokens", &text, &skip)) return NULL;
    PyObject *out = tokens_joined(text, skip.buf, skip.len, 1, 1);
    PyBuffer_Release(&skip);
    return out;
}

/* ------------------------------------------------------------------------------- toxicity windows */

/* window_sizes(text, size) -> toxicity.window_sizes of the word counts of text.splitlines()
 * (a line break that splitlines takes as one, \r\n, makes an empty line here: a line of no words
 * changes no window) */
static PyObject *window_sizes(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "Un:window_sizes", &text, &size)) return NULL;
    if (size < 1) {
        PyErr_SetString(PyExc_ValueError, "window_sizes: size must be >= 1");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), cur = 0, words = 0;
    PyObject *out = PyList_New(0), *v = NULL;
    if (!out) return NULL;
#define EMIT(x)                                                                                                \
    do {                                                                                                       \
        v = PyLong_FromSsize_t(x);                                                                             \
        if (!v || PyList_Append(out, v) < 0) goto fail;                                                        \
        Py_CLEAR(v);                                                                                           \
    } while (0)
    int in_word = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        Py_UCS4 c = i < n ? READ(i) : '\n';
        if (!(i == n || is_line_break(c))) {
            if (SPACE(c)) {
                in_word = 0;
            } else if (!in_word) {
                in_word = 1;
                words++;
            }
            continue;
        }
        in_word = 0;
        Py_ssize_t m = words; /* one line's words */
        words = 0;
        if (m > size) {
            if (cur) {
                EMIT(cur);
                cur = 0;
            }
            Py_ssize_t k = (m - 1) / size;
            for (Py_ssize_t j = 0; j < k; j++) EMIT(size);
            m -= k * size;
        }
        if (cur + m > size && cur) {
            EMIT(cur);
            cur = 0;
        }
        cur += m;
    }
    if (cur || PyList_GET_SIZE(out) == 0) EMIT(cur);
#undef EMIT
    return out;
fail:
    Py_XDECREF(v);
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------- split words */

static int in_chars(Py_UCS4 c, PyObject *chars) { /* c is one of the characters of the str chars */
    return PyUnicode_FindChar(chars, c, 0, PyUnicode_GET_LENGTH(chars), 1) >= 0;
}

/* str.isalpha() and str.islower() of s[lo:hi] */
static int alpha_lower(PyObject *s, Py_ssize_t lo, Py_ssize_t hi) {
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    int cased = 0;
    if (hi <= lo) return 0;
    for (Py_ssize_t i = lo; i < hi; i++) {
        Py_UCS4 c = READ(i);
        if (!u_isalpha(c) || u_isupper(c) || u_istitle(c)) return 0;
        cased |= u_islower(c);
    }
    return cased;
}

/* split_words(sequence, anchors, words, edge) -> ocrstats.split_words(sequence, anchors, words)
 * with edge its EDGE punctuation: at each anchor, the anchor joined to a neighbour (the left one
 * stripped of edge on its left, the right one on its right), both lower-case letters of 5+ in
 * all, makes a word of words */
static PyObject *split_words(PyObject *self, PyObject *args) {
    PyObject *seq, *anchors, *words, *edge, *ids_obj = NULL;
    if (!PyArg_ParseTuple(args, "O!O!OU|O:split_words", &PyList_Type, &seq, &PyList_Type, &anchors, &words, &edge,
                          &ids_obj))
        return NULL;
    if (!PyAnySet_Check(words)) {
        PyErr_SetString(PyExc_TypeError, "split_words: words must be a set or frozenset");
        return NULL;
    }
    /* with ids (an int64 buffer), the sequence is seq[ids[0]], seq[ids[1]], ... */
    Py_buffer view = {0};
    const int64_t *ids = NULL;
    if (ids_obj != NULL && ids_obj != Py_None) {
        if (get_int64(ids_obj, &view, "split_words") < 0) return NULL;
        ids = (const int64_t *)view.buf;
    }
    PyObject *res = NULL;
    Py_ssize_t n = ids ? view.len / 8 : PyList_GET_SIZE(seq), n_seq = PyList_GET_SIZE(seq), found = 0, last = -2;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(anchors); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(anchors, k));
        if (i == -1 && PyErr_Occurred()) goto done;
        for (int side = 0; side < 2; side++) {
            Py_ssize_t a = side ? i : i - 1, b = side ? i + 1 : i;
            if (a <= last || a < 0 || b >= n) continue;
            Py_ssize_t ia = ids ? (Py_ssize_t)ids[a] : a, ib = ids ? (Py_ssize_t)ids[b] : b;
            if (ia < 0 || ia >= n_seq || ib < 0 || ib >= n_seq) {
                PyErr_SetString(PyExc_ValueError, "split_words: an id outside the sequence");
                goto done;
            }
            PyObject *x = PyList_GET_ITEM(seq, ia), *y = PyList_GET_ITEM(seq, ib);
            if (!PyUnicode_Check(x) || !PyUnicode_Check(y)) {
                PyErr_SetString(PyExc_TypeError, "split_words: the sequence must hold str");
                goto done;
            }
            Py_ssize_t xl = 0, xh = PyUnicode_GET_LENGTH(x), yl = 0, yh = PyUnicode_GET_LENGTH(y);
            while (xl < xh && in_chars(PyUnicode_READ_CHAR(x, xl), edge)) xl++; /* x.lstrip(edge) */
            while (yh > yl && in_chars(PyUnicode_READ_CHAR(y, yh - 1), edge)) yh--; /* y.rstrip(edge) */
            if (!alpha_lower(x, xl, xh) || !alpha_lower(y, yl, yh) || (xh - xl) + (yh - yl) < 5) continue;
            PyObject *xs = PyUnicode_Substring(x, xl, xh), *ys = xs ? PyUnicode_Substring(y, yl, yh) : NULL;
            PyObject *xy = ys ? PyUnicode_Concat(xs, ys) : NULL;
            Py_XDECREF(xs);
            Py_XDECREF(ys);
            if (!xy) goto done;
            int in = PySet_Contains(words, xy);
            Py_DECREF(xy);
            if (in < 0) goto done;
            if (in) {
                found++;
                last = b;
                break;
            }
        }
    }
    res = PyLong_FromSsize_t(found);
done:
    if (ids) PyBuffer_Release(&view);
    return res;
}

/* text_token_ids(text, table, arena) -> (int64 bytearray: the id in a token table of tok_add of each
 * token of text.split(), -1 where absent; [(position, token)] of the absent ones): token_ids of
 * text.split() without a str object per known token */
static PyObject *text_token_ids(PyObject *self, PyObject *args) {
    PyObject *text, *table, *arena;
    if (!PyArg_ParseTuple(args, "UO!O!:text_token_ids", &text, &PyByteArray_Type, &table, &PyByteArray_Type, &arena))
        return NULL;
    tok_header *hdr = NULL;
    st_slot *slots = NULL;
    uint32_t *cps = NULL;
    uint64_t n_cps = 0;
    int empty = PyByteArray_GET_SIZE(table) == 0; /* no key yet */
    if (!empty && tok_view(table, arena, &hdr, &slots, &cps, &n_cps) < 0) return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), cap = 256, len = 0, i = 0;
    int64_t *ids = PyMem_Malloc(cap * sizeof(int64_t));
    PyObject *missing = PyList_New(0), *out = NULL;
    if (!ids || !missing) {
        if (!ids) PyErr_NoMemory();
        goto done;
    }
    for (;;) {
        while (i < n && SPACE(READ(i))) i++;
        if (i >= n) break;
        Py_ssize_t j = i + 1;
        while (j < n && !SPACE(READ(j))) j++;
        int64_t id = -1;
        if (!empty) {
            Py_ssize_t s = slot_of(slots, hdr->nslots, cps, n_cps, cp_hash(kind, data, i, j), kind, data, i, j);
            if (s >= 0) id = slots[s].id;
        }
        if (id < 0) {
            PyObject *pair = Py_BuildValue("(nN)", len, PyUnicode_Substring(text, i, j));
            int bad = !pair || PyList_Append(missing, pair) < 0;
            Py_XDECREF(pair);
            if (bad) goto done;
        }
        if (len == cap) {
            cap *= 2;
            int64_t *grown = PyMem_Realloc(ids, cap * sizeof(int64_t));
            if (!grown) {
                PyErr_NoMemory();
                goto done;
            }
            ids = grown;
        }
        ids[len++] = id;
        i = j;
    }
    PyObject *buf = PyByteArray_FromStringAndSize((const char *)ids, len * (Py_ssize_t)sizeof(int64_t));
    if (buf) out = Py_BuildValue("(NO)", buf, missing);
done:
    PyMem_Free(ids);
    Py_XDECREF(missing);
    return out;
}

/* ------------------------------------------------------------------------------- token table properties */

/* the characters of a str: a bitmap of its ASCII ones, the str itself for the others */
typedef struct {
    uint64_t ascii[2];
    PyObject *chars;
} char_set;

static void char_set_of(PyObject *chars, char_set *cs) {
    cs->ascii[0] = cs->ascii[1] = 0;
    cs->chars = chars;
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(chars); i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(chars, i);
        if (c < 128) cs->ascii[c >> 6] |= 1ULL << (c & 63);
    }
}

static inline int in_set_chars(Py_UCS4 c, const char_set *cs) {
    return c < 128 ? (int)((cs->ascii[c >> 6] >> (c & 63)) & 1) : in_chars(c, cs->chars);
}

/* s[lo:hi] with the characters of cs stripped from both ends, as str.strip(chars) */
static void strip_chars(PyObject *s, const char_set *cs, Py_ssize_t *lo, Py_ssize_t *hi) {
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t a = 0, b = PyUnicode_GET_LENGTH(s);
    while (a < b && in_set_chars(READ(a), cs)) a++;
    while (b > a && in_set_chars(READ(b - 1), cs)) b--;
    *lo = a;
    *hi = b;
}

/* s[lo:hi].lower(): ASCII lower-cased here, any other str by str.lower */
static PyObject *lower_of(PyObject *s, Py_ssize_t lo, Py_ssize_t hi) {
    if (PyUnicode_IS_ASCII(s)) {
        PyObject *out = PyUnicode_New(hi - lo, 127);
        if (!out) return NULL;
        const Py_UCS1 *src = PyUnicode_1BYTE_DATA(s) + lo;
        Py_UCS1 *dst = PyUnicode_1BYTE_DATA(out);
        for (Py_ssize_t i = 0; i < hi - lo; i++) dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? src[i] + 32 : src[i];
        return out;
    }
    PyObject *sub = (lo == 0 && hi == PyUnicode_GET_LENGTH(s)) ? (Py_INCREF(s), s) : PyUnicode_Substring(s, lo, hi);
    if (!sub) return NULL;
    PyObject *out = PyObject_CallMethod(sub, "lower", NULL);
    Py_DECREF(sub);
    return out;
}

/* tok_extend(new, low_index, low_words, core_index, edge) -> (low ids, sizes, alpha, plain: int64
 * bytearrays, one per token; then ids, lengths and core ids of the new lower-cased forms) of
 * curate.tokentable.TokenTable._add_many: per token t, len(t), any(map(str.isalpha, t)), whether
 * t.strip(edge) is a lower-case word of 3+ letters, and the id of t.lower() in low_index; a form
 * not there gets the next id (appended to low_words), and its stripped form's id in core_index
 * (setdefault with the next id). */
static PyObject *tok_extend(PyObject *self, PyObject *args) {
    PyObject *tokens, *low_index, *low_words, *core_index, *edge;
    if (!PyArg_ParseTuple(args, "O!O!O!O!U:tok_extend", &PyList_Type, &tokens, &PyDict_Type, &low_index,
                          &PyList_Type, &low_words, &PyDict_Type, &core_index, &edge))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    char_set cs;
    char_set_of(edge, &cs);
    int64_t *li = NULL, *size = NULL, *alpha = NULL, *plain = NULL;
    PyObject *o_li = new_int64(n, &li), *o_size = new_int64(n, &size), *o_alpha = new_int64(n, &alpha),
             *o_plain = new_int64(n, &plain);
    PyObject *nj = PyList_New(0), *nlen = PyList_New(0), *ncore = PyList_New(0), *out = NULL;
    if (!o_li || !o_size || !o_alpha || !o_plain || !nj || !nlen || !ncore) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *t = PyList_GET_ITEM(tokens, k);
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "tok_extend: tokens must be str");
            goto done;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(t), lo, hi;
        int kind = PyUnicode_KIND(t);
        const void *data = PyUnicode_DATA(t);
        size[k] = len;
        alpha[k] = 0;
        for (Py_ssize_t i = 0; i < len && !alpha[k]; i++) alpha[k] = u_isalpha(READ(i)) ? 1 : 0;
        strip_chars(t, &cs, &lo, &hi);
        plain[k] = (hi - lo > 2 && alpha_lower(t, lo, hi)) ? 1 : 0;
        PyObject *low = lower_of(t, 0, len);
        if (!low) goto done;
        PyObject *got = PyDict_GetItemWithError(low_index, low); /* borrowed */
        if (got) {
            li[k] = PyLong_AsLongLong(got);
            Py_DECREF(low);
            if (li[k] == -1 && PyErr_Occurred()) goto done;
            continue;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(low);
            goto done;
        }
        Py_ssize_t j = PyList_GET_SIZE(low_words), clo, chi;
        PyObject *jo = PyLong_FromSsize_t(j);
        int bad = !jo || PyDict_SetItem(low_index, low, jo) < 0 || PyList_Append(low_words, low) < 0
                  || PyList_Append(nj, jo) < 0;
        Py_XDECREF(jo);
        if (bad) {
            Py_DECREF(low);
            goto done;
        }
        li[k] = j;
        PyObject *lenobj = PyLong_FromSsize_t(PyUnicode_GET_LENGTH(low));
        bad = !lenobj || PyList_Append(nlen, lenobj) < 0;
        Py_XDECREF(lenobj);
        strip_chars(low, &cs, &clo, &chi);
        PyObject *core = bad ? NULL : PyUnicode_Substring(low, clo, chi);
        Py_DECREF(low);
        if (!core) goto done;
        PyObject *cid = PyDict_GetItemWithError(core_index, core); /* borrowed */
        if (cid) {
            Py_INCREF(cid);
        } else if (!PyErr_Occurred()) {
            cid = PyLong_FromSsize_t(PyDict_GET_SIZE(core_index));
            if (cid && PyDict_SetItem(core_index, core, cid) < 0) Py_CLEAR(cid);
        }
        Py_DECREF(core);
        bad = !cid || PyList_Append(ncore, cid) < 0;
        Py_XDECREF(cid);
        if (bad) goto done;
    }
    out = Py_BuildValue("(OOOOOOO)", o_li, o_size, o_alpha, o_plain, nj, nlen, ncore);
done:
    Py_XDECREF(o_li);
    Py_XDECREF(o_size);
    Py_XDECREF(o_alpha);
    Py_XDECREF(o_plain);
    Py_XDECREF(nj);
    Py_XDECREF(nlen);
    Py_XDECREF(ncore);
    return out;
}

/* s is in the str set words (-1: an error) */
static int in_set(PyObject *words, PyObject *s) { return s ? PySet_Contains(words, s) : -1; }

/* curate.tokentable._is_dict_token(tok, words, short): the stripped, lower-cased core is one letter
 * run ([^\W\d_]+) found in words (3+ letters) or short (1-2); or, with letters >= 0.7 of it, every
 * run of 3+ letters in words (none: the core in short). 1, 0, or -1 on an error. */
static int dict_token(PyObject *tok, PyObject *words, PyObject *shortw, const char_set *cs) {
    Py_ssize_t lo, hi;
    strip_chars(tok, cs, &lo, &hi);
    PyObject *core = lower_of(tok, lo, hi);
    if (!core) return -1;
    Py_ssize_t len = PyUnicode_GET_LENGTH(core);
    int kind = PyUnicode_KIND(core), res;
    const void *data = PyUnicode_DATA(core);
    int all_alpha = len > 0;
    for (Py_ssize_t i = 0; i < len && all_alpha; i++) all_alpha = u_isalpha(READ(i)) ? 1 : 0;
    if (all_alpha) { /* str.isalpha(): one letter run, the whole core */
        res = in_set(len > 2 ? words : shortw, core);
        Py_DECREF(core);
        return res;
    }
    if (len == 0) {
        Py_DECREF(core);
        return 0;
    }
    Py_ssize_t letters = 0, long_runs = 0;
    for (Py_ssize_t i = 0; i < len;) {
        if (!is_letter(READ(i))) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < len && is_letter(READ(j))) j++;
        letters += j - i;
        i = j;
    }
    if (letters == 0 || (double)letters < 0.7 * (double)len) {
        Py_DECREF(core);
        return 0;
    }
    res = 1;
    for (Py_ssize_t i = 0; i < len && res == 1;) {
        if (!is_letter(READ(i))) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < len && is_letter(READ(j))) j++;
        if (j - i > 2) {
            long_runs++;
            PyObject *run = PyUnicode_Substring(core, i, j);
            res = in_set(words, run);
            Py_XDECREF(run);
        }
        i = j;
    }
    if (res == 1 && long_runs == 0) res = in_set(shortw, core);
    Py_DECREF(core);
    return res;
}

/* dict_tokens(tokens, ids, words, short, edge) -> int64 bytearray: _is_dict_token of tokens[i] for
 * each i of the int64 buffer ids (1 or 0) */
static PyObject *dict_tokens(PyObject *self, PyObject *args) {
    PyObject *tokens, *ids, *words, *shortw, *edge;
    if (!PyArg_ParseTuple(args, "O!OOOU:dict_tokens", &PyList_Type, &tokens, &ids, &words, &shortw, &edge))
        return NULL;
    if (!PyAnySet_Check(words) || !PyAnySet_Check(shortw)) {
        PyErr_SetString(PyExc_TypeError, "dict_tokens: words and short must be sets or frozensets");
        return NULL;
    }
    Py_buffer view;
    if (get_int64(ids, &view, "dict_tokens") < 0) return NULL;
    Py_ssize_t n = view.len / 8, nt = PyList_GET_SIZE(tokens);
    const int64_t *idv = (const int64_t *)view.buf;
    char_set cs;
    char_set_of(edge, &cs);
    int64_t *flags;
    PyObject *out = new_int64(n, &flags);
    for (Py_ssize_t k = 0; out && k < n; k++) {
        PyObject *tok = (idv[k] >= 0 && idv[k] < nt) ? PyList_GET_ITEM(tokens, idv[k]) : NULL;
        if (!tok || !PyUnicode_Check(tok)) {
            PyErr_SetString(PyExc_ValueError, "dict_tokens: an id outside the token list, or a token not a str");
            Py_CLEAR(out);
            break;
        }
        int r = dict_token(tok, words, shortw, &cs);
        if (r < 0) Py_CLEAR(out);
        else flags[k] = r;
    }
    PyBuffer_Release(&view);
    return out;
}

/* ------------------------------------------------------------------------------- dedup hashing */

static inline uint64_t fmix64_u(uint64_t x) { /* splitmix64's finaliser (curate.dedup.shingles.fmix64) */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

#define DEDUP_Q 0x9E3779B97F4A7C15ULL

/* dedup_word_hashes(raw, long_word) -> (uint64 bytearray: the hash of every word, int64 bytearray:
 * each document's first word and the end (documents + 1), [(word, start, length)] of words longer
 * than long_word bytes): curate.dedup.shingles.word_hashes of the texts joined by "\n" and encoded
 * (raw), words separated by " " and "\n", documents by "\n"; a word's hash is len * Q mixed with its
 * bytes 8 at a time (little-endian, the bytes past the word masked off), up to long_word bytes (a
 * multiple of 8); the longer words' hashes are finished by the caller (xxh64 of the whole word). */
static PyObject *dedup_word_hashes(PyObject *self, PyObject *args) {
    Py_buffer raw;
    Py_ssize_t long_word;
    if (!PyArg_ParseTuple(args, "y*n:dedup_word_hashes", &raw, &long_word)) return NULL;
    if (long_word < 8 || long_word % 8) {
        PyBuffer_Release(&raw);
        PyErr_SetString(PyExc_ValueError, "dedup_word_hashes: long_word must be a positive multiple of 8");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)raw.buf;
    Py_ssize_t n = raw.len, n_docs = 1, n_words = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c == '\n') n_docs++;
        if (c != ' ' && c != '\n' && (i == 0 || p[i - 1] == ' ' || p[i - 1] == '\n')) n_words++;
    }
    int64_t *offsets = NULL, *hashes = NULL;
    PyObject *o_h = new_int64(n_words, &hashes), *o_off = new_int64(n_docs + 1, &offsets);
    PyObject *longs = PyList_New(0), *out = NULL;
    if (!o_h || !o_off || !longs) goto done;
    Py_ssize_t doc = 0, w = 0, i = 0;
    offsets[0] = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '\n') {
            offsets[++doc] = w;
            i++;
            continue;
        }
        if (c == ' ') {
            i++;
            continue;
        }
        Py_ssize_t s = i;
        while (i < n && p[i] != ' ' && p[i] != '\n') i++;
        Py_ssize_t len = i - s;
        uint64_t h = (uint64_t)len * DEDUP_Q;
        for (Py_ssize_t k = 0; k < long_word; k += 8) {
            Py_ssize_t rem = len - k;
            uint64_t chunk = 0;
            for (int b = 0; b < 8 && s + k + b < n; b++) chunk |= (uint64_t)p[s + k + b] << (8 * b);
            if (rem < 8) chunk &= ((uint64_t)1 << (8 * rem)) - 1;
            h = fmix64_u(h + chunk);
            if (rem <= 8) break;
        }
        if (len > long_word) {
            PyObject *item = Py_BuildValue("(nnn)", w, s, len);
            int bad = !item || PyList_Append(longs, item) < 0;
            Py_XDECREF(item);
            if (bad) goto done;
        }
        hashes[w++] = (int64_t)h;
    }
    offsets[++doc] = w;
    out = Py_BuildValue("(OOO)", o_h, o_off, longs);
done:
    Py_XDECREF(o_h);
    Py_XDECREF(o_off);
    Py_XDECREF(longs);
    PyBuffer_Release(&raw);
    return out;
}

/* dedup_normalize(texts) -> (bytes: the UTF-8 of " ".join(t.lower().split()) of every text, joined
 * by "\n" (None and "" give ""), int64 bytearray: where each starts and the end, int64 bytearray:
 * each one's word count (0 for ""); or None where a text holds a lone surrogate (UTF-8 has none:
 * the caller's definition raises) */
static PyObject *dedup_normalize(PyObject *self, PyObject *args) {
    PyObject *texts;
    if (!PyArg_ParseTuple(args, "O!:dedup_normalize", &PyList_Type, &texts)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(texts), cap = 1 << 16, len = 0;
    int64_t *offs = NULL, *words = NULL;
    PyObject *o_offs = new_int64(n + 1, &offs), *o_words = o_offs ? new_int64(n, &words) : NULL, *out = NULL;
    unsigned char *buf = PyMem_Malloc(cap);
    if (!o_offs || !o_words || !buf) {
        if (!buf) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t d = 0; d < n; d++) {
        if (len + 1 > cap) {
            unsigned char *grown = PyMem_Realloc(buf, cap *= 2);
            if (!grown) {
                PyErr_NoMemory();
                goto done;
            }
            buf = grown;
        }
        if (d > 0) buf[len++] = '\n';
        offs[d] = len;
        words[d] = 0;
        PyObject *t = PyList_GET_ITEM(texts, d);
        if (t == Py_None) continue;
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "dedup_normalize: texts must be str or None");
            goto done;
        }
        if (PyUnicode_GET_LENGTH(t) == 0) continue;
        PyObject *low = PyObject_CallMethod(t, "lower", NULL);
        if (!low) goto done;
        int kind = PyUnicode_KIND(low);
        const void *data = PyUnicode_DATA(low);
        Py_ssize_t m = PyUnicode_GET_LENGTH(low);
        if (len + 4 * m + 2 > cap) { /* a code point takes at most 4 bytes, the separators 1 each */
            while (len + 4 * m + 2 > cap) cap *= 2;
            unsigned char *grown = PyMem_Realloc(buf, cap);
            if (!grown) {
                Py_DECREF(low);
                PyErr_NoMemory();
                goto done;
            }
            buf = grown;
        }
        int in_word = 0, bad = 0;
        for (Py_ssize_t i = 0; i < m && !bad; i++) {
            Py_UCS4 c = READ(i);
            if (SPACE(c)) {
                in_word = 0;
                continue;
            }
            if (!in_word) {
                if (words[d]++) buf[len++] = ' ';
                in_word = 1;
            }
            if (c < 0x80) {
                buf[len++] = (unsigned char)c;
            } else if (c < 0x800) {
                buf[len++] = (unsigned char)(0xC0 | (c >> 6));
                buf[len++] = (unsigned char)(0x80 | (c & 0x3F));
            } else if (c < 0x10000) {
                if (c >= 0xD800 && c <= 0xDFFF) bad = 1;
                buf[len++] = (unsigned char)(0xE0 | (c >> 12));
                buf[len++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
                buf[len++] = (unsigned char)(0x80 | (c & 0x3F));
            } else {
                buf[len++] = (unsigned char)(0xF0 | (c >> 18));
                buf[len++] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
                buf[len++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
                buf[len++] = (unsigned char)(0x80 | (c & 0x3F));
            }
        }
        Py_DECREF(low);
        if (bad) {
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
    }
    offs[n] = len;
    PyObject *raw = PyBytes_FromStringAndSize((const char *)buf, len);
    if (raw) out = Py_BuildValue("(NOO)", raw, o_offs, o_words);
done:
    PyMem_Free(buf);
    Py_XDECREF(o_offs);
    Py_XDECREF(o_words);
    return out;
}

/* minhash(word_hashes, word_offsets, ngram, a, b) -> (uint32 bytearray: the MinHash signature of
 * every document, documents x len(a), int64 bytearray: its shingle count): each shingle's hash as
 * curate.dedup.shingles.shingle_hashes combines ngram word hashes, each permutation k as
 * curate.dedup.minhash.signatures takes it (the top 32 bits of the least (a[k] * x + b[k]) mod
 * 2**64); a document without shingles gets 0xFFFFFFFF everywhere */
static PyObject *minhash(PyObject *self, PyObject *args) {
    PyObject *wh_obj, *off_obj, *a_obj, *b_obj;
    Py_ssize_t ngram;
    if (!PyArg_ParseTuple(args, "OOnOO:minhash", &wh_obj, &off_obj, &ngram, &a_obj, &b_obj)) return NULL;
    if (ngram < 1) {
        PyErr_SetString(PyExc_ValueError, "minhash: ngram must be >= 1");
        return NULL;
    }
    Py_buffer wv, ov, av, bv;
    if (get_int64(wh_obj, &wv, "minhash") < 0) return NULL;
    if (get_int64(off_obj, &ov, "minhash") < 0) {
        PyBuffer_Release(&wv);
        return NULL;
    }
    if (get_int64(a_obj, &av, "minhash") < 0) {
        PyBuffer_Release(&wv);
        PyBuffer_Release(&ov);
        return NULL;
    }
    if (get_int64(b_obj, &bv, "minhash") < 0) {
        PyBuffer_Release(&wv);
        PyBuffer_Release(&ov);
        PyBuffer_Release(&av);
        return NULL;
    }
    PyObject *out = NULL, *o_sig = NULL, *o_n = NULL;
    uint64_t *mins = NULL;
    const uint64_t *wh = (const uint64_t *)wv.buf, *a = (const uint64_t *)av.buf, *b = (const uint64_t *)bv.buf;
    const int64_t *off = (const int64_t *)ov.buf;
    Py_ssize_t n_w = wv.len / 8, n_docs = ov.len / 8 - 1, perms = av.len / 8;
    if (n_docs < 0 || bv.len != av.len || perms < 1) {
        PyErr_SetString(PyExc_ValueError, "minhash: offsets need one entry more than documents, a and b one per permutation");
        goto done;
    }
    for (Py_ssize_t d = 0; d < n_docs; d++)
        if (off[d] < 0 || off[d] > off[d + 1] || off[d + 1] > n_w) {
            PyErr_SetString(PyExc_ValueError, "minhash: offsets outside the word hashes");
            goto done;
        }
    o_sig = PyByteArray_FromStringAndSize(NULL, n_docs * perms * 4);
    int64_t *n_sh = NULL;
    o_n = new_int64(n_docs, &n_sh);
    mins = PyMem_Malloc(perms * sizeof(uint64_t));
    if (!o_sig || !o_n || !mins) {
        if (!mins) PyErr_NoMemory();
        goto done;
    }
    uint32_t *sig = (uint32_t *)PyByteArray_AS_STRING(o_sig);
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        Py_ssize_t base = off[d], nw = off[d + 1] - off[d], m = nw - (ngram - 1);
        if (m < 0) m = 0;
        n_sh[d] = m;
        for (Py_ssize_t k = 0; k < perms; k++) mins[k] = UINT64_MAX;
        for (Py_ssize_t i = 0; i < m; i++) {
            uint64_t h = wh[base + i];
            for (Py_ssize_t t = 1; t < ngram; t++) h = fmix64_u(h * DEDUP_Q + wh[base + i + t]);
            for (Py_ssize_t k = 0; k < perms; k++) {
                uint64_t v = a[k] * h + b[k];
                if (v < mins[k]) mins[k] = v;
            }
        }
        for (Py_ssize_t k = 0; k < perms; k++) sig[d * perms + k] = (uint32_t)(mins[k] >> 32);
    }
    out = Py_BuildValue("(OO)", o_sig, o_n);
done:
    PyMem_Free(mins);
    Py_XDECREF(o_sig);
    Py_XDECREF(o_n);
    PyBuffer_Release(&wv);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&av);
    PyBuffer_Release(&bv);
    return out;
}

/* ------------------------------------------------------------------------------- decontamination words */

/* is_word with a table for ASCII (the common case) */
static inline int word_char(Py_UCS4 c) {
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return is_word(c);
}

/* word_hashes(text, cache) -> (bytearray of uint64, missing): for each match of \w+ in text (re's \w
 * on str: str.isalnum() or "_"), cache[word] (an int in [0, 2**64)); where the word is not in cache
 * the slot holds 0 and (position, word) is appended to missing, for the caller to hash and fill in */
static PyObject *word_hashes(PyObject *self, PyObject *args) {
    PyObject *text, *cache, *arena = NULL;
    if (!PyArg_ParseTuple(args, "UO|O:word_hashes", &text, &cache, &arena)) return NULL;
    /* cache: a dict of word -> hash, or a token table of tok_put (hash bits as its values) */
    int use_table = !PyDict_Check(cache), empty = 0;
    tok_header *hdr = NULL;
    st_slot *slots = NULL;
    uint32_t *cps = NULL;
    uint64_t n_cps = 0;
    if (use_table) {
        if (arena == NULL) {
            PyErr_SetString(PyExc_TypeError, "word_hashes: a token table needs its arena");
            return NULL;
        }
        empty = PyByteArray_Check(cache) && PyByteArray_GET_SIZE(cache) == 0;
        if (!empty && tok_view(cache, arena, &hdr, &slots, &cps, &n_cps) < 0) return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t cap = 64, len = 0;
    uint64_t *hs = PyMem_Malloc(cap * sizeof(uint64_t));
    PyObject *missing = PyList_New(0);
    if (!hs || !missing) {
        PyMem_Free(hs);
        Py_XDECREF(missing);
        return PyErr_NoMemory();
    }
    Py_ssize_t i = 0;
    while (i < n) {
        if (!word_char(READ(i))) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < n && word_char(READ(j))) j++;
        uint64_t h = 0;
        if (use_table) {
            Py_ssize_t s = empty ? -1 : slot_of(slots, hdr->nslots, cps, n_cps, cp_hash(kind, data, i, j), kind, data, i, j);
            if (s >= 0) {
                h = (uint64_t)slots[s].id;
            } else {
                PyObject *item = Py_BuildValue("nN", len, PyUnicode_Substring(text, i, j));
                if (!item || PyList_Append(missing, item) < 0) {
                    Py_XDECREF(item);
                    goto fail;
                }
                Py_DECREF(item);
            }
            goto store;
        }
        PyObject *w = PyUnicode_Substring(text, i, j);
        if (!w) goto fail;
        PyObject *v = PyDict_GetItemWithError(cache, w); /* borrowed */
        if (v != NULL) {
            h = PyLong_AsUnsignedLongLong(v);
            if (h == (uint64_t)-1 && PyErr_Occurred()) {
                Py_DECREF(w);
                goto fail;
            }
        } else if (PyErr_Occurred()) {
            Py_DECREF(w);
            goto fail;
        } else {
            PyObject *item = Py_BuildValue("nN", len, w); /* steals w */
            w = NULL;
            if (!item || PyList_Append(missing, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
        Py_XDECREF(w);
    store:
        if (len == cap) {
            cap *= 2;
            uint64_t *grown = PyMem_Realloc(hs, cap * sizeof(uint64_t));
            if (!grown) {
                PyErr_NoMemory();
                goto fail;
            }
            hs = grown;
        }
        hs[len++] = h;
        i = j;
    }
    PyObject *out = PyByteArray_FromStringAndSize((const char *)hs, len * 8);
    PyMem_Free(hs);
    if (!out) {
        Py_DECREF(missing);
        return NULL;
    }
    return Py_BuildValue("NN", out, missing);
fail:
    PyMem_Free(hs);
    Py_DECREF(missing);
    return NULL;
}

/* ------------------------------------------------------------ fastText supervised prediction */

/* The prediction of a supervised fastText model with hierarchical softmax (lid.176.ftz): the same
 * float operations in the same order as fastText's Dictionary::getLine, Model::computeHidden and
 * HierarchicalSoftmaxLoss::dfs (k = 1, threshold 0), so the label and the probability are the
 * bits fastText gives. Floats are IEEE single precision on SSE2, no contraction into FMA (the
 * x86-64 baseline has none) and expf/log of the C library, as fastText's build calls them.
 * The input rows arrive decoded (norm * centroid, one float product each, as ProductQuantizer::
 * addcode forms them). A token's row ids are cached: the cache changes no result. */

#include <math.h>

typedef struct {
    int dim, minn, maxn, nwords, nlabels, eos, softmax, word_ngrams, copy_first;
    Py_buffer rows_view;     /* rows borrowed from a Python buffer (a dense matrix mapped from the file) */
    int rows_borrowed;
    uint32_t bucket;
    Py_ssize_t nrows;
    float *rows;             /* nrows x dim */
    float *out;              /* (nlabels - 1) x dim: the tree's inner nodes */
    int32_t *left, *right;   /* 2 * nlabels - 1 nodes */
    int32_t *prune;          /* bucket -> pruned id, -1: dropped; NULL: no pruning */
    int prune_none;          /* pruneidx_size_ == 0: every n-gram dropped */
    /* the vocabulary: open addressing over fastText's hash of the word */
    uint32_t vmask; int32_t *vslot; char *varena; Py_ssize_t *voff; int32_t *vlen; int8_t *vtype;
    int32_t *sub_off, *sub_len, *subs;   /* each word's row ids: itself, then its n-grams */
    /* the token cache: token bytes -> row ids */
    uint32_t cmask, cused; int32_t *cslot; char *carena; Py_ssize_t carena_len, carena_cap;
    Py_ssize_t *coff; int32_t *clen; int32_t *cids_off, *cids_len; uint32_t *chash;
    int32_t *cids; Py_ssize_t cids_len_total, cids_cap;
} LidModel;

#define LID_CACHE_SLOTS (1u << 18)        /* cleared when half full */
#define LID_CACHE_IDS (16 << 20)

static uint32_t ft_hash(const unsigned char *s, Py_ssize_t n) {
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) { h ^= (uint32_t)(int8_t)s[i]; h *= 16777619u; }
    return h;
}

static int lid_push(int32_t **buf, Py_ssize_t *len, Py_ssize_t *cap, int32_t v) {
    if (*len == *cap) {
        Py_ssize_t nc = *cap ? *cap * 2 : 64;
        int32_t *nb = PyMem_Realloc(*buf, nc * sizeof(int32_t));
        if (!nb) { PyErr_NoMemory(); return -1; }
        *buf = nb; *cap = nc;
    }
    (*buf)[(*len)++] = v;
    return 0;
}

/* Dictionary::computeSubwords over w (BOW + token + EOW) with pushHash, appended to buf. */
static int lid_subwords(const LidModel *M, const unsigned char *w, Py_ssize_t n, int32_t **buf,
                        Py_ssize_t *len, Py_ssize_t *cap) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((w[i] & 0xC0) == 0x80) continue;
        uint32_t h = 2166136261u;
        Py_ssize_t j = i;
        for (int k = 1; j < n && k <= M->maxn; k++) {
            h ^= (uint32_t)(int8_t)w[j]; h *= 16777619u; j++;
            while (j < n && (w[j] & 0xC0) == 0x80) { h ^= (uint32_t)(int8_t)w[j]; h *= 16777619u; j++; }
            if (k >= M->minn && !(k == 1 && (i == 0 || j == n))) {
                int32_t id = (int32_t)(h % M->bucket);
                if (M->prune_none) continue;
                if (M->prune) { id = M->prune[id]; if (id < 0) continue; }
                if (lid_push(buf, len, cap, M->nwords + id) < 0) return -1;
            }
        }
    }
    return 0;
}

static int32_t lid_word(const LidModel *M, const unsigned char *s, Py_ssize_t n, uint32_t h) {
    for (uint32_t i = h & M->vmask;; i = (i + 1) & M->vmask) {
        int32_t w = M->vslot[i];
        if (w < 0) return -1;
        if (M->vlen[w] == n && memcmp(M->varena + M->voff[w], s, n) == 0) return w;
    }
}

static void lid_free(PyObject *cap) {
    LidModel *M = PyCapsule_GetPointer(cap, "corpusmix.lid");
    if (!M) return;
    if (M->rows_borrowed) PyBuffer_Release(&M->rows_view); else PyMem_Free(M->rows);
    PyMem_Free(M->out); PyMem_Free(M->left); PyMem_Free(M->right); PyMem_Free(M->prune);
    PyMem_Free(M->vslot); PyMem_Free(M->varena); PyMem_Free(M->voff); PyMem_Free(M->vlen); PyMem_Free(M->vtype);
    PyMem_Free(M->sub_off); PyMem_Free(M->sub_len); PyMem_Free(M->subs);
    PyMem_Free(M->cslot); PyMem_Free(M->carena); PyMem_Free(M->coff); PyMem_Free(M->clen);
    PyMem_Free(M->cids_off); PyMem_Free(M->cids_len); PyMem_Free(M->chash); PyMem_Free(M->cids);
    PyMem_Free(M);
}

static void *lid_copy(PyObject *obj, Py_ssize_t want, Py_ssize_t itemsize, const char *what) {
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (v.len != want * itemsize) {
        PyErr_Format(PyExc_ValueError, "lid_model: %s holds %zd bytes, expected %zd", what, v.len, want * itemsize);
        PyBuffer_Release(&v);
        return NULL;
    }
    void *p = PyMem_Malloc(v.len ? v.len : 1);
    if (!p) { PyBuffer_Release(&v); PyErr_NoMemory(); return NULL; }
    if (v.len) memcpy(p, v.buf, v.len);
    PyBuffer_Release(&v);
    return p;
}

/* ft_model(dims, rows, out, left, right, prune, words, types) -> capsule.
 * dims: (dim, minn, maxn, nwords, nlabels, bucket, nrows, prune_mode: 1 table, 0 none dropped, -1 all,
 *        softmax: 0 hierarchical softmax, 1 softmax, word_ngrams, copy_first: the dense average's first
 *        row copied, borrow: rows read in place from their buffer, held until the model is freed) */
static PyObject *ft_model(PyObject *self, PyObject *args) {
    PyObject *rows, *out, *left, *right, *prune, *words, *types;
    int dim, minn, maxn, nwords, nlabels, prune_mode, softmax, word_ngrams, copy_first, borrow;
    long long bucket; Py_ssize_t nrows;
    if (!PyArg_ParseTuple(args, "(iiiiiLniiiii)OOOOOOO", &dim, &minn, &maxn, &nwords, &nlabels, &bucket, &nrows,
                          &prune_mode, &softmax, &word_ngrams, &copy_first, &borrow, &rows, &out, &left, &right,
                          &prune, &words, &types))
        return NULL;
    if (!PyList_Check(words) || dim <= 0 || dim > 512 || nlabels < 2 || (softmax && nlabels > 64) || bucket <= 0
        || bucket > 0x7FFFFFFFLL || nrows < nwords) {
        PyErr_SetString(PyExc_ValueError, "lid_model: bad dimensions");
        return NULL;
    }
    LidModel *M = PyMem_Calloc(1, sizeof(LidModel));
    if (!M) return PyErr_NoMemory();
    PyObject *cap = PyCapsule_New(M, "corpusmix.lid", lid_free);
    if (!cap) { PyMem_Free(M); return NULL; }
    M->dim = dim; M->minn = minn; M->maxn = maxn; M->nwords = nwords; M->nlabels = nlabels;
    M->bucket = (uint32_t)bucket; M->nrows = nrows; M->prune_none = prune_mode < 0; M->eos = -1;
    M->softmax = softmax; M->word_ngrams = word_ngrams; M->copy_first = copy_first;
    Py_ssize_t size = PyList_GET_SIZE(words);
    if (borrow) {
        if (PyObject_GetBuffer(rows, &M->rows_view, PyBUF_C_CONTIGUOUS) < 0) goto fail;
        M->rows_borrowed = 1;
        if (M->rows_view.len != nrows * dim * 4) {
            PyErr_SetString(PyExc_ValueError, "ft_model: rows of the wrong size");
            goto fail;
        }
        M->rows = M->rows_view.buf;
    } else if (!(M->rows = lid_copy(rows, nrows * dim, 4, "rows"))) {
        goto fail;
    }
    if (!(M->out = lid_copy(out, (Py_ssize_t)(softmax ? nlabels : nlabels - 1) * dim, 4, "out"))
        || !(M->left = lid_copy(left, 2 * nlabels - 1, 4, "left")) || !(M->right = lid_copy(right, 2 * nlabels - 1, 4, "right"))
        || !(M->vtype = lid_copy(types, size, 1, "types"))
        || (prune_mode > 0 && !(M->prune = lid_copy(prune, (Py_ssize_t)bucket, 4, "prune"))))
        goto fail;
    uint32_t slots = 1;
    while (slots < 2 * (uint32_t)size + 2) slots <<= 1;
    M->vmask = slots - 1;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *w = PyList_GET_ITEM(words, i);
        if (!PyBytes_Check(w)) { PyErr_SetString(PyExc_TypeError, "lid_model: words must be bytes"); goto fail; }
        total += PyBytes_GET_SIZE(w);
    }
    M->vslot = PyMem_Malloc(slots * sizeof(int32_t)); M->varena = PyMem_Malloc(total + 1);
    M->voff = PyMem_Malloc((size + 1) * sizeof(Py_ssize_t)); M->vlen = PyMem_Malloc((size + 1) * sizeof(int32_t));
    M->sub_off = PyMem_Malloc((size + 1) * sizeof(int32_t)); M->sub_len = PyMem_Malloc((size + 1) * sizeof(int32_t));
    if (!M->vslot || !M->varena || !M->voff || !M->vlen || !M->sub_off || !M->sub_len) { PyErr_NoMemory(); goto fail; }
    memset(M->vslot, 0xff, slots * sizeof(int32_t));
    Py_ssize_t pos = 0, slen = 0, scap = 0;
    unsigned char *tmp = NULL; Py_ssize_t tcap = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *w = PyList_GET_ITEM(words, i);
        const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(w);
        Py_ssize_t n = PyBytes_GET_SIZE(w);
        memcpy(M->varena + pos, s, n);
        M->voff[i] = pos; M->vlen[i] = (int32_t)n; pos += n;
        /* Dictionary::load: word2int_[find(word)] = i, the last of equal words wins */
        uint32_t k = ft_hash(s, n) & M->vmask;
        while (M->vslot[k] >= 0 && !(M->vlen[M->vslot[k]] == n && memcmp(M->varena + M->voff[M->vslot[k]], s, n) == 0))
            k = (k + 1) & M->vmask;
        M->vslot[k] = (int32_t)i;
        int is_eos = n == 4 && memcmp(s, "</s>", 4) == 0;
        if (is_eos && M->eos < 0) M->eos = (int32_t)i;
        M->sub_off[i] = (int32_t)slen;
        if (lid_push(&M->subs, &slen, &scap, (int32_t)i) < 0) goto fail;
        if (!is_eos) {  /* Dictionary::initNgrams: the word, then the n-grams of BOW + word + EOW */
            if (n + 2 > tcap) {
                tcap = n + 2;
                unsigned char *nt = PyMem_Realloc(tmp, tcap);
                if (!nt) { PyMem_Free(tmp); PyErr_NoMemory(); goto fail; }
                tmp = nt;
            }
            tmp[0] = '<'; memcpy(tmp + 1, s, n); tmp[n + 1] = '>';
            if (lid_subwords(M, tmp, n + 2, &M->subs, &slen, &scap) < 0) { PyMem_Free(tmp); goto fail; }
        }
        M->sub_len[i] = (int32_t)(slen - M->sub_off[i]);
    }
    PyMem_Free(tmp);
    return cap;
fail:
    Py_DECREF(cap);
    return NULL;
}

static void lid_cache_clear(LidModel *M) {
    if (M->cslot) memset(M->cslot, 0xff, (M->cmask + 1) * sizeof(int32_t));
    M->cused = 0; M->carena_len = 0; M->cids_len_total = 0;
}

static int lid_cache_init(LidModel *M) {
    M->cmask = LID_CACHE_SLOTS - 1;
    Py_ssize_t entries = LID_CACHE_SLOTS / 2;
    M->cslot = PyMem_Malloc(LID_CACHE_SLOTS * sizeof(int32_t));
    M->coff = PyMem_Malloc(entries * sizeof(Py_ssize_t)); M->clen = PyMem_Malloc(entries * sizeof(int32_t));
    M->cids_off = PyMem_Malloc(entries * sizeof(int32_t)); M->cids_len = PyMem_Malloc(entries * sizeof(int32_t));
    M->chash = PyMem_Malloc(entries * sizeof(uint32_t));
    if (!M->cslot || !M->coff || !M->clen || !M->cids_off || !M->cids_len || !M->chash) { PyErr_NoMemory(); return -1; }
    lid_cache_clear(M);
    return 0;
}

/* The row ids of an out-of-vocabulary token (the n-grams of BOW + token + EOW), cached; NULL on
 * error. *n receives their count. */
static const int32_t lid_none[1] = {0};  /* the ids of a token without any: none to read */

static const int32_t *lid_oov(LidModel *M, const unsigned char *s, Py_ssize_t n, uint32_t h, int32_t *count) {
    if (!M->cslot && lid_cache_init(M) < 0) return NULL;
    uint32_t k = h & M->cmask;
    for (;; k = (k + 1) & M->cmask) {
        int32_t e = M->cslot[k];
        if (e < 0) break;
        if (M->chash[e] == h && M->clen[e] == n && memcmp(M->carena + M->coff[e], s, n) == 0) {
            *count = M->cids_len[e];
            return *count ? M->cids + M->cids_off[e] : lid_none;
        }
    }
    if (M->cused >= (M->cmask + 1) / 2 || M->cids_len_total > LID_CACHE_IDS || M->carena_len > (64 << 20)) {
        lid_cache_clear(M);
        for (k = h & M->cmask; M->cslot[k] >= 0; k = (k + 1) & M->cmask) {}
    }
    if (M->carena_len + n + 2 > M->carena_cap) {
        Py_ssize_t nc = (M->carena_len + n + 2) * 2;
        char *na = PyMem_Realloc(M->carena, nc);
        if (!na) { PyErr_NoMemory(); return NULL; }
        M->carena = na; M->carena_cap = nc;
    }
    /* the token, then BOW + token + EOW right after it (the n-grams' input) */
    char *t = M->carena + M->carena_len;
    memcpy(t, s, n);
    Py_ssize_t start = M->cids_len_total;
    unsigned char *w = (unsigned char *)PyMem_Malloc(n + 2);
    if (!w) { PyErr_NoMemory(); return NULL; }
    w[0] = '<'; memcpy(w + 1, s, n); w[n + 1] = '>';
    int rc = lid_subwords(M, w, n + 2, &M->cids, &M->cids_len_total, &M->cids_cap);
    PyMem_Free(w);
    if (rc < 0) return NULL;
    int32_t e = (int32_t)M->cused++;
    M->coff[e] = M->carena_len; M->clen[e] = (int32_t)n; M->chash[e] = h;
    M->cids_off[e] = (int32_t)start; M->cids_len[e] = (int32_t)(M->cids_len_total - start);
    M->carena_len += n;
    M->cslot[k] = e;
    *count = M->cids_len[e];
    return *count ? M->cids + start : lid_none;
}

/* HierarchicalSoftmaxLoss::dfs with k = 1: the last leaf reached replaces the best one. */
static void lid_dfs(const LidModel *M, int32_t node, float score, const float *hidden, float floor_,
                    int *have, float *best, int32_t *best_node) {
    if (score < floor_) return;
    if (*have && score < *best) return;
    if (M->left[node] == -1 && M->right[node] == -1) {
        *have = 1; *best = score; *best_node = node;
        return;
    }
    const float *w = M->out + (Py_ssize_t)(node - M->nlabels) * M->dim;
    float f = 0.0f;
    for (int j = 0; j < M->dim; j++) f += w[j] * hidden[j];
    f = (float)(1. / (double)(1.0f + expf(-f)));
    float l0 = (float)log((double)(float)(1.0 - (double)f) + 1e-5);
    float l1 = (float)log((double)f + 1e-5);
    lid_dfs(M, M->left[node], score + l0, hidden, floor_, have, best, best_node);
    lid_dfs(M, M->right[node], score + l1, hidden, floor_, have, best, best_node);
}

typedef struct { int32_t *buf; Py_ssize_t len, cap; } IntVec;

#if defined(__SSE2__)
#include <emmintrin.h>
/* hidden[0:D] += each row, the D / 4 sums held in registers (element by element, as the scalar loop) */
#define LID_ADD_FIXED(D)                                                                              \
    static void lid_add_##D(const float *rows, float *hidden, const int32_t *ids, int32_t n) {       \
        __m128 acc[D / 4];                                                                            \
        for (int q = 0; q < D / 4; q++) acc[q] = _mm_loadu_ps(hidden + 4 * q);                        \
        for (int32_t i = 0; i < n; i++) {                                                             \
            if (i + 8 < n) {  /* the row 8 ahead on its way from memory (no effect on the sums) */    \
                const char *ahead = (const char *)(rows + (Py_ssize_t)ids[i + 8] * D);               \
                for (int b = 0; b < D * 4; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);            \
            }                                                                                         \
            const float *r = rows + (Py_ssize_t)ids[i] * D;                                           \
            for (int q = 0; q < D / 4; q++) acc[q] = _mm_add_ps(acc[q], _mm_loadu_ps(r + 4 * q));     \
        }                                                                                             \
        for (int q = 0; q < D / 4; q++) _mm_storeu_ps(hidden + 4 * q, acc[q]);                        \
    }
LID_ADD_FIXED(16)
LID_ADD_FIXED(64)
#endif

static inline void lid_add_rows(const LidModel *M, float *hidden, const int32_t *ids, int32_t n, int64_t *n_ids) {
    const int dim = M->dim;
    int32_t i = 0;
    *n_ids += n;
    if (n > 0 && *n_ids == n && M->copy_first) {  /* DenseMatrix::averageRowsToVector: the first row copied */
        memcpy(hidden, M->rows + (Py_ssize_t)ids[0] * dim, sizeof(float) * dim);
        i = 1;
    }
#if defined(__SSE2__)
    if (dim == 16) { lid_add_16(M->rows, hidden, ids + i, n - i); return; }
    if (dim == 64) { lid_add_64(M->rows, hidden, ids + i, n - i); return; }
#endif
    for (; i < n; i++) {  /* rows read in place from the file need not be 4-byte aligned */
        const char *r = (const char *)(M->rows + (Py_ssize_t)ids[i] * dim);
        for (int d = 0; d < dim; d++) {
            float x;
            memcpy(&x, r + 4 * (Py_ssize_t)d, 4);
            hidden[d] += x;
        }
    }
}

/* v += ids[0:n]; -1 on error (out of memory). */
static int ft_extend(IntVec *v, const int32_t *ids, int32_t n) {
    if (n <= 0) return 0;  /* nothing to copy (and memcpy is never given a NULL buffer) */
    if (v->len + n > v->cap) {
        Py_ssize_t nc = (v->len + n) * 2 + 64;
        int32_t *nb = PyMem_Realloc(v->buf, nc * sizeof(int32_t));
        if (!nb) { PyErr_NoMemory(); return -1; }
        v->buf = nb; v->cap = nc;
    }
    memcpy(v->buf + v->len, ids, n * sizeof(int32_t));
    v->len += n;
    return 0;
}

/* One token of Dictionary::getLine: its row ids appended to line, its hash kept for the word
 * n-grams; 1 when the token is EOS (the line ends), 0, or -1 on error. */
static int ft_token(LidModel *M, const unsigned char *tok, Py_ssize_t n, IntVec *line, IntVec *hashes) {
    uint32_t h = ft_hash(tok, n);
    int32_t wid = lid_word(M, tok, n, h);
    int is_eos = n == 4 && memcmp(tok, "</s>", 4) == 0;
    int is_word = wid >= 0 ? M->vtype[wid] == 0 : !(n >= 9 && memcmp(tok, "__label__", 9) == 0);
    if (is_word) {
        if (wid >= 0) {
            if (ft_extend(line, M->subs + M->sub_off[wid], M->sub_len[wid]) < 0) return -1;
        } else if (!is_eos) {
            int32_t cnt;
            const int32_t *ids = lid_oov(M, tok, n, h, &cnt);
            if (!ids || ft_extend(line, ids, cnt) < 0) return -1;
        }
        if (M->word_ngrams > 1 && lid_push(&hashes->buf, &hashes->len, &hashes->cap, (int32_t)h) < 0) return -1;
    }
    return is_eos;
}

/* Model::computeHidden of fastText's reading of text.replace("\n", " ") + "\n": the row ids in
 * Dictionary::getLine's order (every token's, then the word n-grams'), summed in that order and
 * scaled; the number of rows (0: none, fastText predicts nothing), -1 on error. */
static int64_t ft_hidden(LidModel *M, const unsigned char *s, Py_ssize_t len, float *hidden) {
    memset(hidden, 0, sizeof(float) * M->dim);
    int ended = 0;
    IntVec line = {NULL, 0, 0}, hashes = {NULL, 0, 0};
    Py_ssize_t i = 0;
    while (i < len && !ended) {
        unsigned char c = s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == '\0') { i++; continue; }
        Py_ssize_t a = i;
        while (i < len) {
            c = s[i];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == '\0') break;
            i++;
        }
        ended = ft_token(M, s + a, i - a, &line, &hashes);
        if (ended < 0) goto fail;
    }
    if (!ended && ft_token(M, (const unsigned char *)"</s>", 4, &line, &hashes) < 0) goto fail;
    /* Dictionary::addWordNgrams */
    for (Py_ssize_t a = 0; a < hashes.len; a++) {
        uint64_t h = (uint64_t)(int64_t)hashes.buf[a];
        for (Py_ssize_t b = a + 1; b < hashes.len && b < a + M->word_ngrams; b++) {
            h = h * 116049371u + (uint64_t)(int64_t)hashes.buf[b];
            int32_t id = (int32_t)(h % (uint64_t)M->bucket);
            if (M->prune_none) continue;
            if (M->prune) { id = M->prune[id]; if (id < 0) continue; }
            id += M->nwords;
            if (ft_extend(&line, &id, 1) < 0) goto fail;
        }
    }
    int64_t n_ids = 0;
    lid_add_rows(M, hidden, line.buf, (int32_t)line.len, &n_ids);
    PyMem_Free(line.buf);
    PyMem_Free(hashes.buf);
    if (n_ids > 0) {
        float scale = (float)(1.0 / (double)n_ids);
        for (int d = 0; d < M->dim; d++) hidden[d] *= scale;
    }
    return n_ids;
fail:
    PyMem_Free(line.buf);
    PyMem_Free(hashes.buf);
    return -1;
}

/* ft_predict(model, text): fastText's predict(text.replace("\n", " ")) of a supervised model:
 * hierarchical softmax: (label index, probability) of k = 1, or None where fastText predicts
 * nothing; softmax: the probability fastText gives each label when k covers them all (threshold
 * 0), a tuple in label order, or None. */
static PyObject *ft_predict(PyObject *self, PyObject *args) {
    PyObject *cap, *text;
    if (!PyArg_ParseTuple(args, "OU", &cap, &text)) return NULL;
    LidModel *M = PyCapsule_GetPointer(cap, "corpusmix.lid");
    if (!M) return NULL;
    Py_ssize_t len;
    const unsigned char *s = (const unsigned char *)PyUnicode_AsUTF8AndSize(text, &len);
    if (!s) return NULL;
    float hidden[512];
    int64_t n = ft_hidden(M, s, len, hidden);
    if (n < 0) return NULL;
    if (n == 0) Py_RETURN_NONE;
    if (!M->softmax) {
        int have = 0; float best = 0.0f; int32_t best_node = -1;
        float floor_ = (float)log((double)0.0f + 1e-5);
        lid_dfs(M, 2 * M->nlabels - 2, 0.0f, hidden, floor_, &have, &best, &best_node);
        if (!have) Py_RETURN_NONE;
        return Py_BuildValue("(id)", (int)best_node, (double)expf(best));
    }
    /* SoftmaxLoss::computeOutput, then Loss::findKBest's std_log and predictLine's exp */
    float outv[64];
    int L = M->nlabels;
    for (int i = 0; i < L; i++) {
        const float *w = M->out + (Py_ssize_t)i * M->dim;
        float d = 0.0f;
        for (int j = 0; j < M->dim; j++) d += w[j] * hidden[j];
        if (isnan(d)) { PyErr_SetString(PyExc_RuntimeError, "Encountered NaN."); return NULL; }
        outv[i] = d;
    }
    float mx = outv[0], z = 0.0f;
    for (int i = 0; i < L; i++) mx = outv[i] < mx ? mx : outv[i];  /* std::max(output[i], max) */
    for (int i = 0; i < L; i++) { outv[i] = (float)exp((double)(outv[i] - mx)); z += outv[i]; }
    PyObject *res = PyTuple_New(L);
    if (!res) return NULL;
    for (int i = 0; i < L; i++) {
        float o = outv[i] / z;
        float sc = (float)log((double)o + 1e-5);
        PyObject *v = PyFloat_FromDouble((double)expf(sc));
        if (!v) { Py_DECREF(res); return NULL; }
        PyTuple_SET_ITEM(res, i, v);
    }
    return res;
}

/* ------------------------------------------------------------------------------- module */

static PyMethodDef methods[] = {
    {"token_ids", token_ids, METH_VARARGS,
     "token_ids(tokens, index[, arena]) -> (bytearray of int64 ids, -1 where a token is not in index; missing "
     "count); index: a dict, or a token table of tok_add with its arena"},
    {"word_ids", word_ids, METH_VARARGS,
     "word_ids(text, index, other) -> bytearray of int64: index's id of each match of "
     "[^\\W\\d_]+(?:'[^\\W\\d_]+)? in text, other where absent (index: a dict or a str_table)"},
    {"utf8_len", utf8_len, METH_O, "utf8_len(text) -> len(text.encode('utf-8', 'surrogatepass'))"},
    {"tok_add", tok_add, METH_VARARGS,
     "tok_add(table, arena, tokens, first_id): new distinct tokens into a token table (two bytearrays), "
     "with ids first_id, first_id + 1, ..."},
    {"tok_put", tok_put, METH_VARARGS,
     "tok_put(table, arena, tokens, values): new distinct tokens into a token table with the int64 values given"},
    {"str_table", str_table, METH_O,
     "str_table(dict of str -> int) -> bytes: the dict as a read-only table that word_ids reads"},
    {"unique_counts", unique_counts, METH_O,
     "unique_counts(int64 buffer) -> (bytearray of sorted distinct values, bytearray of their counts)"},
    {"rep_ngram_cover", rep_ngram_cover, METH_VARARGS,
     "rep_ngram_cover(int64 buffer, n) -> tokens covered by an n-gram occurring twice or more"},
    {"text_lines", text_lines, METH_VARARGS,
     "text_lines(text) -> (non-blank lines of text.split('\\n'), how many end in a terminal character)"},
    {"dup_line_counts", dup_line_counts, METH_VARARGS,
     "dup_line_counts(lines) -> (characters of repeated stripped lines, characters of all stripped lines)"},
    {"label_counts", label_counts, METH_VARARGS,
     "label_counts(lines, stop, max_lines) -> None or (labels, segments, label chars, segment chars)"},
    {"line_starts", line_starts, METH_VARARGS, "line_starts(lines, max_lines) -> distinct normalised line starts"},
    {"boilerplate_counts", boilerplate_counts, METH_VARARGS,
     "boilerplate_counts(text, frequent, short) -> (frequent short segment chars, segment chars, segments)"},
    {"stamped_lines", stamped_lines, METH_VARARGS,
     "stamped_lines(lines, max_lines, prefix) -> lines with a timestamp in their first prefix characters"},
    {"char_counts", char_counts, METH_VARARGS, "char_counts(text) -> the values of Counter(text), in its order"},
    {"nonascii_tokens", nonascii_tokens, METH_VARARGS,
     "nonascii_tokens(text) -> re.findall(r'[^\\s]*[^\\x00-\\x7f][^\\s]*', text)"},
    {"ft_tokens", ft_tokens, METH_VARARGS, "ft_tokens(text) -> ' '.join(re.findall(r'\\w+|[^\\w\\s]', text))"},
    {"lm_tokens", lm_tokens, METH_VARARGS,
     "lm_tokens(text, skip_bitmap) -> the tokens of each line of text.splitlines(), skipped characters left "
     "out, digits as 0"},
    {"window_sizes", window_sizes, METH_VARARGS,
     "window_sizes(text, size) -> toxicity.window_sizes of the word counts of text.splitlines()"},
    {"split_words", split_words, METH_VARARGS,
     "split_words(sequence, anchors, words, edge[, ids]) -> ocrstats.split_words(sequence, anchors, words); with "
     "ids (int64), the sequence is sequence[ids[0]], sequence[ids[1]], ..."},
    {"text_token_ids", text_token_ids, METH_VARARGS,
     "text_token_ids(text, table, arena) -> (bytearray of int64 ids of text.split()'s tokens in a token table of "
     "tok_add, -1 where absent; [(position, token)] of the absent ones)"},
    {"tok_extend", tok_extend, METH_VARARGS,
     "tok_extend(new, low_index, low_words, core_index, edge) -> (low ids, sizes, alpha, plain, new low ids, their "
     "lengths, their core ids): the properties of new tokens of curate.tokentable.TokenTable"},
    {"dict_tokens", dict_tokens, METH_VARARGS,
     "dict_tokens(tokens, ids, words, short, edge) -> int64 bytearray: curate.tokentable._is_dict_token of "
     "tokens[i] for each i of ids"},
    {"dedup_word_hashes", dedup_word_hashes, METH_VARARGS,
     "dedup_word_hashes(raw, long_word) -> (uint64 word hashes, int64 document offsets, [(word, start, length)] of "
     "longer words): curate.dedup.shingles.word_hashes of the joined texts"},
    {"dedup_normalize", dedup_normalize, METH_VARARGS,
     "dedup_normalize(texts) -> (UTF-8 of the normalised texts joined by newlines, int64 starts and end, int64 "
     "word counts) or None (a lone surrogate): curate.dedup.shingles.normalize of each"},
    {"minhash", minhash, METH_VARARGS,
     "minhash(word_hashes, word_offsets, ngram, a, b) -> (uint32 signatures, documents x permutations; int64 "
     "shingle counts): curate.dedup.minhash.signatures of curate.dedup.shingles.shingle_hashes"},
    {"word_hashes", word_hashes, METH_VARARGS,
     "word_hashes(text, cache) -> (bytearray of uint64: cache[w] for each match w of \\w+ in text, 0 where "
     "absent; [(position, word)] of the absent ones)"},
    {"ft_model", ft_model, METH_VARARGS,
     "ft_model(dims, rows, out, left, right, prune, words, types) -> a supervised fastText model (curate.ftpredict)"},
    {"ft_predict", ft_predict, METH_VARARGS,
     "ft_predict(model, text) -> fastText's predict(text.replace('\\n', ' ')): (label index, probability) of k=1 "
     "(hierarchical softmax), every label's probability (softmax), or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Compiled kernels of curate's statistics.",
                                    -1, methods};

#ifndef SOURCE_SHA256
#define SOURCE_SHA256 "" /* built without setup.py: no digest, curate.native does not use the module */
#endif

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
