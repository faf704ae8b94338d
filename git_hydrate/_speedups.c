/* git_hydrate._speedups: the tokeniser's hot loop in C (optional).
 *
 * raw_counts(data) counts the raw tokens of a blob ([A-Za-z0-9_]+ runs of its
 * bytes) without making a Python object for each occurrence: every token is
 * hashed where it lies and counted in a table of its own, and only the
 * distinct tokens become `str` keys of the dict returned, in the order they
 * first occur. git_hydrate/hydrate/terms.py counts the same in Python when this
 * module was not built (no compiler at install time); tests/test_speedups.py
 * holds the two to the same answers.
 *
 * The hash is the one Python gives its own `bytes` and `str` (SipHash, seeded
 * per process), and the table is probed as a dict is, so a repository's contents
 * cannot be made to collide in this table any more than in a dict.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030E0000
#define HASH_BYTES(data, length) Py_HashBuffer((data), (length))
#else
#if PY_VERSION_HEX >= 0x030D0000
/* 3.13 moved its declaration to the internal headers; the function is still
 * exported (3.14 made it public as Py_HashBuffer). */
PyAPI_FUNC(Py_hash_t) _Py_HashBytes(const void *, Py_ssize_t);
#endif
#define HASH_BYTES(data, length) _Py_HashBytes((data), (length))
#endif

/* 1 for a byte of a raw token (an ASCII letter or digit, or `_`). */
static unsigned char token_byte[256];

typedef struct {
    Py_ssize_t start;
    Py_ssize_t length;
    Py_ssize_t count;
    Py_hash_t hash;
} Token;

typedef struct {
    Token *tokens;    /* the distinct tokens, in order of first occurrence */
    Py_ssize_t used;  /* how many */
    Py_ssize_t room;  /* how many `tokens` holds */
    Py_ssize_t *slots; /* open addressing: 1 + an index into `tokens`, 0 free */
    size_t mask;       /* the slots' count less one (a power of two) */
} Table;

static void table_free(Table *table)
{
    PyMem_Free(table->tokens);
    PyMem_Free(table->slots);
}

/* The slot after `at` in a hash's probe sequence (`perturb` starts as the hash):
 * CPython's dict's, in which every bit of the hash soon takes part. By the next
 * slot (linear probing), tokens whose hashes share only their low bits queued in
 * one run of slots: with a known seed (PYTHONHASHSEED=0) a blob of such tokens,
 * easily found, took time quadratic in their number, which a dict does not. */
static size_t next_slot(size_t at, size_t *perturb, size_t mask)
{
    *perturb >>= 5;
    return (at * 5 + *perturb + 1) & mask;
}

/* Twice the slots, every token placed again by its kept hash. */
static int table_grow(Table *table)
{
    size_t count = (table->mask + 1) * 2;
    Py_ssize_t *slots = PyMem_Calloc(count, sizeof(Py_ssize_t));
    if (slots == NULL) {
        return -1;
    }
    for (Py_ssize_t index = 0; index < table->used; index++) {
        size_t perturb = (size_t)table->tokens[index].hash;
        size_t at = perturb & (count - 1);
        while (slots[at] != 0) {
            at = next_slot(at, &perturb, count - 1);
        }
        slots[at] = index + 1;
    }
    PyMem_Free(table->slots);
    table->slots = slots;
    table->mask = count - 1;
    return 0;
}

/* Count the token data[start:start+length]: one more of a known one, or a new entry. */
static int table_count(Table *table, const unsigned char *data, Py_ssize_t start,
                       Py_ssize_t length)
{
    Py_hash_t hash = HASH_BYTES(data + start, length);
    size_t perturb = (size_t)hash;
    size_t at = perturb & table->mask;
    for (;;) {
        Py_ssize_t slot = table->slots[at];
        if (slot == 0) {
            break;
        }
        Token *token = &table->tokens[slot - 1];
        if (token->hash == hash && token->length == length &&
            memcmp(data + token->start, data + start, (size_t)length) == 0) {
            token->count++;
            return 0;
        }
        at = next_slot(at, &perturb, table->mask);
    }
    if (table->used == table->room) {
        Py_ssize_t room = table->room * 2;
        Token *tokens = PyMem_Realloc(table->tokens, (size_t)room * sizeof(Token));
        if (tokens == NULL) {
            return -1;
        }
        table->tokens = tokens;
        table->room = room;
    }
    table->tokens[table->used] = (Token){start, length, 1, hash};
    table->used++;
    table->slots[at] = table->used;
    /* at most half the slots taken: probes stay short */
    if ((size_t)table->used * 2 > table->mask + 1) {
        return table_grow(table);
    }
    return 0;
}

/* The dict of the counted tokens, `str` keys in order of first occurrence. */
static PyObject *table_dict(const Table *table, const unsigned char *data)
{
    PyObject *counts = PyDict_New();
    if (counts == NULL) {
        return NULL;
    }
    for (Py_ssize_t index = 0; index < table->used; index++) {
        const Token *token = &table->tokens[index];
        PyObject *key = PyUnicode_DecodeASCII((const char *)data + token->start,
                                              token->length, NULL);
        PyObject *value = key == NULL ? NULL : PyLong_FromSsize_t(token->count);
        int failed = value == NULL || PyDict_SetItem(counts, key, value) < 0;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (failed) {
            Py_DECREF(counts);
            return NULL;
        }
    }
    return counts;
}

/* The table of data's raw tokens, counted; -1 and an exception if out of memory. */
static int table_fill(Table *table, const unsigned char *data, Py_ssize_t size)
{
    table->used = 0;
    table->room = 256;
    table->mask = 1023;
    table->tokens = PyMem_Malloc((size_t)table->room * sizeof(Token));
    table->slots = PyMem_Calloc(table->mask + 1, sizeof(Py_ssize_t));
    if (table->tokens == NULL || table->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t at = 0;
    while (at < size) {
        while (at < size && !token_byte[data[at]]) {
            at++;
        }
        Py_ssize_t start = at;
        while (at < size && token_byte[data[at]]) {
            at++;
        }
        if (at > start && table_count(table, data, start, at - start) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(raw_counts_doc,
             "raw_counts(data, /)\n--\n\n"
             "How many times each raw token ([A-Za-z0-9_]+) occurs in data, a dict of\n"
             "str keys in order of first occurrence.");

static PyObject *raw_counts(PyObject *module, PyObject *arg)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Table table = {NULL, 0, 0, NULL, 0};
    PyObject *counts = NULL;
    if (table_fill(&table, view.buf, view.len) == 0) {
        counts = table_dict(&table, view.buf);
    }
    table_free(&table);
    PyBuffer_Release(&view);
    return counts;
}

/* counts[word] += times for each word of the tuple `words`. */
static int add_words(PyObject *counts, PyObject *words, Py_ssize_t times)
{
    if (!PyTuple_Check(words)) {
        PyErr_SetString(PyExc_TypeError, "a raw token's words must be a tuple");
        return -1;
    }
    for (Py_ssize_t index = 0; index < PyTuple_GET_SIZE(words); index++) {
        PyObject *word = PyTuple_GET_ITEM(words, index);
        PyObject *known = PyDict_GetItemWithError(counts, word); /* borrowed */
        if (known == NULL && PyErr_Occurred()) {
            return -1;
        }
        Py_ssize_t before = known == NULL ? 0 : PyLong_AsSsize_t(known);
        if (before == -1 && PyErr_Occurred()) {
            return -1;
        }
        PyObject *after = PyLong_FromSsize_t(before + times);
        if (after == NULL) {
            return -1;
        }
        int failed = PyDict_SetItem(counts, word, after) < 0;
        Py_DECREF(after);
        if (failed) {
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(word_counts_doc,
             "word_counts(data, splits, /)\n--\n\n"
             "How many times each word occurs in data: each distinct raw token's words,\n"
             "splits[token] (a tuple of str), counted as often as the token occurs.");

static PyObject *word_counts(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "word_counts takes two arguments");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *data = view.buf;
    Table table = {NULL, 0, 0, NULL, 0};
    PyObject *counts = NULL;
    if (table_fill(&table, data, view.len) < 0 || (counts = PyDict_New()) == NULL) {
        goto done;
    }
    for (Py_ssize_t index = 0; index < table.used; index++) {
        const Token *token = &table.tokens[index];
        PyObject *raw = PyUnicode_DecodeASCII((const char *)data + token->start,
                                              token->length, NULL);
        PyObject *words = raw == NULL ? NULL : PyObject_GetItem(args[1], raw);
        Py_XDECREF(raw);
        int failed = words == NULL || add_words(counts, words, token->count) < 0;
        Py_XDECREF(words);
        if (failed) {
            Py_CLEAR(counts);
            goto done;
        }
    }
done:
    table_free(&table);
    PyBuffer_Release(&view);
    return counts;
}

/* A raw token's candidate words, each a span of its lower-cased text. */
typedef struct {
    Py_ssize_t start;
    Py_ssize_t length;
} Span;

typedef struct {
    Span *spans;
    Py_ssize_t used;
    Py_ssize_t room;
} Spans;

static int spans_add(Spans *spans, Py_ssize_t start, Py_ssize_t length)
{
    if (spans->used == spans->room) {
        Py_ssize_t room = spans->room * 2;
        Span *grown = PyMem_Realloc(spans->spans, (size_t)room * sizeof(Span));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        spans->spans = grown;
        spans->room = room;
    }
    spans->spans[spans->used++] = (Span){start, length};
    return 0;
}

#define IS_UPPER(c) ((c) >= 'A' && (c) <= 'Z')
#define IS_LOWER(c) ((c) >= 'a' && (c) <= 'z')
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_LETTER(c) (IS_UPPER(c) || IS_LOWER(c))

/* The length of the camel-case part of word[at:end] that starts at `at`, as
 * terms._CAMEL finds it: an upper-case run before an upper-case letter and a
 * lower-case one; or an optional upper-case letter and lower-case ones; or an
 * upper-case run; or a run of digits. */
static Py_ssize_t camel_part(const char *word, Py_ssize_t at, Py_ssize_t end)
{
    Py_ssize_t run = at;
    while (run < end && IS_UPPER(word[run])) {
        run++;
    }
    if (run - at >= 2 && run < end && IS_LOWER(word[run])) {
        return run - at - 1;
    }
    Py_ssize_t lower = at + (IS_UPPER(word[at]) && at + 1 < end && IS_LOWER(word[at + 1]));
    if (IS_LOWER(word[lower])) {
        while (lower < end && IS_LOWER(word[lower])) {
            lower++;
        }
        return lower - at;
    }
    if (run > at) {
        return run - at;
    }
    Py_ssize_t digits = at;
    while (digits < end && IS_DIGIT(word[digits])) {
        digits++;
    }
    return digits - at;
}

/* The candidates of one `_`-free piece text[start:end]: from its first letter
 * on, the word, and its camel parts when it has more than one. */
static int piece_words(Spans *spans, const char *text, Py_ssize_t start, Py_ssize_t end)
{
    while (start < end && !IS_LETTER(text[start])) {
        start++;
    }
    if (start == end) {
        return 0;
    }
    if (spans_add(spans, start, end - start) < 0) {
        return -1;
    }
    Py_ssize_t first = spans->used;
    for (Py_ssize_t at = start; at < end;) {
        Py_ssize_t length = camel_part(text, at, end);
        if (length == 0) { /* (not met: every byte is a letter or digit) */
            at++;
            continue;
        }
        if (spans_add(spans, at, length) < 0) {
            return -1;
        }
        at += length;
    }
    if (spans->used - first == 1) { /* one part: the word itself */
        spans->used = first;
    }
    return 0;
}

/* The stemmed form of the lower-case word[0:length] (stemming.stem), as a new
 * reference: `word_object` itself when no ending goes. */
static PyObject *stemmed(PyObject *word_object, const char *word, Py_ssize_t length)
{
    char last = word[length - 1];
#define ENDS(suffix) \
    (length >= (Py_ssize_t)sizeof(suffix) - 1 && \
     memcmp(word + length - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1) == 0)
    if (last == 'g' && length > 5 && ENDS("ing")) {
        return PyUnicode_DecodeASCII(word, length - 3, NULL);
    }
    if (last == 'd' && length > 4 && ENDS("ed") && !ENDS("eed")) {
        return PyUnicode_DecodeASCII(word, length - 2, NULL);
    }
    if (last == 's') {
        if (length > 4 && ENDS("ies")) {
            PyObject *singular = PyUnicode_New(length - 2, 127);
            if (singular != NULL) {
                memcpy(PyUnicode_DATA(singular), word, (size_t)(length - 3));
                ((char *)PyUnicode_DATA(singular))[length - 3] = 'y';
            }
            return singular;
        }
        if (length > 3 && !ENDS("ss") && !ENDS("us") && !ENDS("is")) {
            return PyUnicode_DecodeASCII(word, length - 1, NULL);
        }
    }
#undef ENDS
    Py_INCREF(word_object);
    return word_object;
}

/* The tuple of the kept candidates: three letters or more, not all digits, not
 * a stop word, stemmed. */
static PyObject *kept_words(const Spans *spans, const char *lower, PyObject *stop)
{
    PyObject *kept = PyList_New(0);
    if (kept == NULL) {
        return NULL;
    }
    for (Py_ssize_t index = 0; index < spans->used; index++) {
        const char *word = lower + spans->spans[index].start;
        Py_ssize_t length = spans->spans[index].length;
        Py_ssize_t digits = 0;
        while (digits < length && IS_DIGIT(word[digits])) {
            digits++;
        }
        if (length < 3 || digits == length) {
            continue;
        }
        PyObject *candidate = PyUnicode_DecodeASCII(word, length, NULL);
        int stopped = candidate == NULL ? -1 : PySet_Contains(stop, candidate);
        PyObject *stem = stopped == 0 ? stemmed(candidate, word, length) : NULL;
        Py_XDECREF(candidate);
        if (stopped == 1) {
            continue;
        }
        int failed = stem == NULL || PyList_Append(kept, stem) < 0;
        Py_XDECREF(stem);
        if (failed) {
            Py_DECREF(kept);
            return NULL;
        }
    }
    PyObject *words = PyList_AsTuple(kept);
    Py_DECREF(kept);
    return words;
}

/* Whether every byte of text[0:size] is a raw token's. */
static int all_token_bytes(const char *text, Py_ssize_t size)
{
    for (Py_ssize_t at = 0; at < size; at++) {
        if (!token_byte[(unsigned char)text[at]]) {
            return 0;
        }
    }
    return 1;
}

PyDoc_STRVAR(split_words_doc,
             "split_words(raw, stop, /)\n--\n\n"
             "The words ranking compares of one ASCII raw token (terms._words): the\n"
             "whole (if it has `_` parts), each part and its camel-case parts,\n"
             "lower-cased; words under three letters, numbers and those in the set\n"
             "stop dropped; stemmed. ValueError if raw has any other character than\n"
             "[A-Za-z0-9_].");

static PyObject *split_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "split_words takes a str and a set");
        return NULL;
    }
    const char *raw = (const char *)PyUnicode_DATA(args[0]);
    Py_ssize_t size = PyUnicode_GET_LENGTH(args[0]);
    /* (the camel parts would skip any other byte, where Python's words end at it) */
    if (!PyUnicode_IS_ASCII(args[0]) || !all_token_bytes(raw, size)) {
        PyErr_SetString(PyExc_ValueError, "split_words takes an ASCII raw token");
        return NULL;
    }
    if (size < 3) {
        return PyTuple_New(0);
    }
    char *lower = PyMem_Malloc((size_t)size);
    Spans spans = {PyMem_Malloc(8 * sizeof(Span)), 0, 8};
    PyObject *words = NULL;
    if (lower == NULL || spans.spans == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t pieces = 0, first = -1, last = -1;
    for (Py_ssize_t at = 0; at < size; at++) {
        char c = raw[at];
        lower[at] = IS_UPPER(c) ? (char)(c - 'A' + 'a') : c;
        if (c != '_') {
            pieces += at == 0 || raw[at - 1] == '_';
            first = first < 0 ? at : first;
            last = at;
        }
    }
    if (pieces > 1 && spans_add(&spans, first, last + 1 - first) < 0) {
        goto done;
    }
    for (Py_ssize_t at = 0; at < size;) {
        Py_ssize_t end = at;
        while (end < size && raw[end] != '_') {
            end++;
        }
        if (end > at && piece_words(&spans, raw, at, end) < 0) {
            goto done;
        }
        at = end + 1;
    }
    words = kept_words(&spans, lower, args[1]);
done:
    PyMem_Free(lower);
    PyMem_Free(spans.spans);
    return words;
}

static PyMethodDef methods[] = {
    {"raw_counts", raw_counts, METH_O, raw_counts_doc},
    {"word_counts", (PyCFunction)(void (*)(void))word_counts, METH_FASTCALL, word_counts_doc},
    {"split_words", (PyCFunction)(void (*)(void))split_words, METH_FASTCALL, split_words_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "git_hydrate._speedups",
    "The tokeniser's hot loop in C (optional; terms.py has the same in Python).",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    for (int byte = 0; byte < 256; byte++) {
        token_byte[byte] = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                           (byte >= '0' && byte <= '9') || byte == '_';
    }
    return PyModule_Create(&module_def);
}
